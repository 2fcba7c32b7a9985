/* setting.h - one checklist setting as the user writes it in their own framework's syntax: a Hydra
 * override, a flag, an environment variable, a DeepSpeed JSON key, a Slurm directive, a command to
 * run, or, when no value can be given, the change in words. The data's rule syntax ("set:<v>",
 * "halve") stays inside; what leaves this module is text a person can paste. No I/O.
 *
 * Ownership: the functions write into the caller's buffer or change the caller's cJSON in place. */
#ifndef OOMSCAN_ADVICE_SETTING_H
#define OOMSCAN_ADVICE_SETTING_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* The line to type (or the thing to do) for setting `set` (the data's {"key", "form", "change",
 * "example"?} plus, when the log printed the job's value, "current" and "proposed" or "already"),
 * written into buf (cap bytes). A value read from the log shows as "current -> proposed". */
void setting_text(const cJSON *set, char *buf, size_t cap);

/* Turn the data's setting into what writers show: "change" becomes a word (halve, decrease, set,
 * run, ...), a set value moves to "value", "text" is added (setting_text) and "example" dropped.
 * Returns 0, -1 out of memory. */
int setting_publish(cJSON *set);

#endif

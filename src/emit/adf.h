/* adf.h - Atlassian Document Format (the rich-text JSON that Jira Cloud's REST v3 takes for an issue's
 * description) from the small Markdown the ticket writer produces: `### ` headings, `- ` bullets with
 * `   - ` sub-bullets, `N. ` numbered items, fenced code blocks (``` or ~~~~), `---` rules, paragraphs;
 * inline `code`, ``code with a ` in it``, **strong**, and backslash escapes.
 *
 * Ownership: the returned tree is the caller's (cJSON_Delete). */
#ifndef OOMSCAN_ADF_H
#define OOMSCAN_ADF_H

#include <cjson/cJSON.h>

/* {"version": 1, "type": "doc", "content": [...]} for `md`, or NULL when out of memory. Every text
 * node is non-empty, as ADF requires; text is taken as it is (the caller made it valid UTF-8). */
cJSON *adf_from_markdown(const char *md);

#endif

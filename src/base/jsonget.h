/* jsonget.h - the one reader of a string member of a JSON object (data files, records, advice).
 *
 * Ownership: the string belongs to the cJSON object; valid while it is. */
#ifndef OOMSCAN_JSONGET_H
#define OOMSCAN_JSONGET_H

#include <cjson/cJSON.h>

/* The string value of `key` in object `o`, or NULL when `o` is not an object, lacks the key, or the value
 * is not a string. */
static inline const char *json_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

#endif

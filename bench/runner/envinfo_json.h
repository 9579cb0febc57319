/* A small JSON writer for env.json: nested objects and arrays with the commas
 * and indentation handled, strings escaped so that any text (a CPU name, a
 * library's version banner, a command line) leaves the file valid JSON. */
#ifndef ROOFLINE_ENVINFO_JSON_H
#define ROOFLINE_ENVINFO_JSON_H

#include <stdbool.h>
#include <stdio.h>

enum { JSON_MAX_DEPTH = 16 };

typedef struct {
    FILE *f;
    int depth;
    bool has_items[JSON_MAX_DEPTH]; /* a comma goes before the next item */
} json_writer;

/* Starts the top-level object. */
void json_begin(json_writer *w, FILE *f);
/* Closes it (and anything left open) and ends the line. */
void json_end(json_writer *w);

/* key is the member name inside an object, NULL inside an array. */
void json_object_begin(json_writer *w, const char *key);
void json_object_end(json_writer *w);
void json_array_begin(json_writer *w, const char *key);
void json_array_end(json_writer *w);

/* value NULL writes null. */
void json_string(json_writer *w, const char *key, const char *value);
/* printf-style string value. */
void json_stringf(json_writer *w, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void json_int(json_writer *w, const char *key, long long value);
/* NaN and infinities write null (JSON has no such numbers). */
void json_number(json_writer *w, const char *key, double value);
void json_bool(json_writer *w, const char *key, bool value);

/* Writes s as a JSON string literal, quotes included: control characters
 * escaped, bytes that are not UTF-8 replaced by '?'. */
void json_put_string(FILE *f, const char *s);

#endif

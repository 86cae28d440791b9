/*
 * errors.c — the error codes of spanheap.h: this thread's last error, and
 * the one table of their names and descriptions. C messages and the Java
 * binding (through sh_error_name) read this table; nobody keeps a copy.
 * A bottom layer: it calls nothing of the core.
 */
#include "errors.h"

#include "base.h"

static __thread int last_error;

void sh_set_error(int err)
{
    last_error = err;
}

SH_API int sh_last_error(void)
{
    return last_error;
}

static const struct {
    const char *name;
    const char *text;
} error_table[] = {
    [SH_OK] = {"SH_OK", "no error"},
    [SH_E_INVALID] = {"SH_E_INVALID", "invalid argument"},
    [SH_E_NOMEM] = {"SH_E_NOMEM", "out of memory"},
    [SH_E_LIMIT] = {"SH_E_LIMIT", "byte limit exceeded"},
    [SH_E_NOT_OWNED] = {"SH_E_NOT_OWNED", "pointer not owned by this heap"},
    [SH_E_DOUBLE_FREE] = {"SH_E_DOUBLE_FREE", "double free"},
    [SH_E_INTERIOR] = {"SH_E_INTERIOR", "interior pointer"},
};

#define ERROR_CODES (sizeof error_table / sizeof error_table[0])

/* A returned -SH_E_x and sh_last_error()'s SH_E_x name the same entry. */
static unsigned error_index(int code)
{
    return code < 0 ? 0u - (unsigned)code : (unsigned)code; /* no overflow at INT_MIN */
}

SH_API const char *sh_error_name(int code)
{
    unsigned i = error_index(code);
    return i < ERROR_CODES ? error_table[i].name : "SH_E_UNKNOWN";
}

const char *sh_error_text(int code)
{
    unsigned i = error_index(code);
    return i < ERROR_CODES ? error_table[i].text : "unknown error";
}

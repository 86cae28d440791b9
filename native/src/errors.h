/*
 * errors.h — this thread's last error; the error names (errors.c).
 */
#ifndef SH_ERRORS_H
#define SH_ERRORS_H

void sh_set_error(int err);          /* this thread's sh_last_error()      */
const char *sh_error_text(int code); /* "double free"; code or -code       */

#endif /* SH_ERRORS_H */

/* errors.c -- the one error table (SL_ERROR_TABLE in sluice.h), as messages
 * and names: one meaning per code. Not here: which call returns which code
 * (each function's contract says). */
#include "sluice.h"

const char *sl_strerror(int err) {
    switch (err) {
    case SL_OK:
        return "success";
#define SL__ERROR_MSG(name, value, msg) \
    case SL_##name:                     \
        return msg;
        SL_ERROR_TABLE(SL__ERROR_MSG)
#undef SL__ERROR_MSG
    default:
        return "unknown error";
    }
}

const char *sl_errname(int err) {
    switch (err) {
    case SL_OK:
        return "SL_OK";
#define SL__ERROR_NAME(name, value, msg) \
    case SL_##name:                      \
        return "SL_" #name;
        SL_ERROR_TABLE(SL__ERROR_NAME)
#undef SL__ERROR_NAME
    default:
        return "SL_UNKNOWN";
    }
}

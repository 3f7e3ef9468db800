/* log.h -- one line per event on stderr: time, level, message. */
#ifndef SL_SERVER_LOG_H
#define SL_SERVER_LOG_H

typedef enum { SLD_LOG_DEBUG, SLD_LOG_INFO, SLD_LOG_WARN, SLD_LOG_ERROR } sld_log_level_t;

/* Messages below this level are dropped (default INFO). */
void sld_log_set_level(sld_log_level_t level);
void sld_log(sld_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define sld_info(...) sld_log(SLD_LOG_INFO, __VA_ARGS__)
#define sld_warn(...) sld_log(SLD_LOG_WARN, __VA_ARGS__)
#define sld_error(...) sld_log(SLD_LOG_ERROR, __VA_ARGS__)
#define sld_debug(...) sld_log(SLD_LOG_DEBUG, __VA_ARGS__)

#endif

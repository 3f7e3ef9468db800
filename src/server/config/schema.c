/* schema.c -- libcyaml's schema of the configuration file: which keys
 * exist, which are required, which are mappings or lists and how long a list
 * may be. Every scalar is a string here (raw_*_t in config_private.h): the
 * values are converted and checked by units.c, policy_config.c and config.c.
 * The keys fronts register are added to it: under listen: (listen.c) and
 * at the top level (section.c).
 *
 * Not here: what a value means, or any message (messages.c rewrites
 * libcyaml's errors with the path and line).
 */
#include <cyaml/cyaml.h>

#include "server/config/config.h"
#include "server/config/config_private.h"
#include "server/config/section.h"

const cyaml_schema_value_t sld_config_string_entry = {
    CYAML_VALUE_STRING(CYAML_FLAG_POINTER, char, 0, CYAML_UNLIMITED),
};

static const cyaml_schema_field_t limit_fields[] = {
    SLD_CFG_STR("algorithm", 0, raw_limit_t, algorithm),
    SLD_CFG_STR("limit", 0, raw_limit_t, limit),
    SLD_CFG_STR("period", 0, raw_limit_t, period),
    SLD_CFG_STR("burst", SLD_CFG_OPT, raw_limit_t, burst),
    SLD_CFG_STR("precision", SLD_CFG_OPT, raw_limit_t, precision),
    SLD_CFG_STR("shaper", SLD_CFG_OPT, raw_limit_t, shaper),
    SLD_CFG_STR("count_denied", SLD_CFG_OPT, raw_limit_t, count_denied),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t limit_entry = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, raw_limit_t, limit_fields),
};

static const cyaml_schema_field_t tier_fields[] = {
    SLD_CFG_STR("name", 0, raw_tier_t, name),
    CYAML_FIELD_SEQUENCE("keys", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_tier_t, keys, &sld_config_string_entry, 0,
                         MAX_TIER_KEYS),
    CYAML_FIELD_SEQUENCE("limits", SLD_CFG_NULLABLE, raw_tier_t, limits, &limit_entry, 0,
                         SL_MAX_LIMITS),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t tier_entry = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, raw_tier_t, tier_fields),
};

static const cyaml_schema_field_t policy_fields[] = {
    SLD_CFG_STR("name", SLD_CFG_OPT, raw_policy_t, name),  /* required: policy_config.c says so, or names it */
    CYAML_FIELD_SEQUENCE("key", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_policy_t, key, &sld_config_string_entry, 0,
                         SLD_MAX_KEY_ATTRS),
    SLD_CFG_STR("mode", SLD_CFG_OPT, raw_policy_t, mode),
    SLD_CFG_STR("soft_percent", SLD_CFG_OPT, raw_policy_t, soft_percent),
    CYAML_FIELD_MAPPING_PTR("pool", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_policy_t, pool, limit_fields),
    CYAML_FIELD_SEQUENCE("limits", SLD_CFG_NULLABLE, raw_policy_t, limits, &limit_entry, 0,
                         SL_MAX_LIMITS),
    CYAML_FIELD_SEQUENCE("tiers", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_policy_t, tiers, &tier_entry, 0,
                         SLD_MAX_TIERS),
    SLD_CFG_STR("on_store_failure", SLD_CFG_OPT, raw_policy_t, on_store_failure),
    SLD_CFG_STR("max_wait", SLD_CFG_OPT, raw_policy_t, max_wait),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t policy_entry = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, raw_policy_t, policy_fields),
};

static const cyaml_schema_field_t limits_fields[] = {
    SLD_CFG_STR("max_connections", SLD_CFG_OPT, raw_limits_t, max_connections),
    SLD_CFG_STR("max_request_bytes", SLD_CFG_OPT, raw_limits_t, max_request_bytes),
    SLD_CFG_STR("max_key_bytes", SLD_CFG_OPT, raw_limits_t, max_key_bytes),
    SLD_CFG_STR("idle_timeout", SLD_CFG_OPT, raw_limits_t, idle_timeout),
    SLD_CFG_STR("write_timeout", SLD_CFG_OPT, raw_limits_t, write_timeout),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t breaker_fields[] = {
    SLD_CFG_STR("failures", SLD_CFG_OPT, raw_breaker_t, failures),
    SLD_CFG_STR("cooldown", SLD_CFG_OPT, raw_breaker_t, cooldown),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t store_fields[] = {
    SLD_CFG_STR("type", SLD_CFG_OPT, raw_store_t, type),
    SLD_CFG_STR("url", SLD_CFG_OPT, raw_store_t, url),
    SLD_CFG_STR("sync", SLD_CFG_OPT, raw_store_t, sync),
    SLD_CFG_STR("sync_interval", SLD_CFG_OPT, raw_store_t, sync_interval),
    SLD_CFG_STR("timeout", SLD_CFG_OPT, raw_store_t, timeout),
    SLD_CFG_STR("clock", SLD_CFG_OPT, raw_store_t, clock),
    SLD_CFG_STR("on_store_failure", SLD_CFG_OPT, raw_store_t, on_store_failure),
    SLD_CFG_STR("nodes", SLD_CFG_OPT, raw_store_t, nodes),
    CYAML_FIELD_MAPPING_PTR("breaker", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_store_t, breaker, breaker_fields),
    SLD_CFG_STR("max_memory", SLD_CFG_OPT, raw_store_t, max_memory),
    SLD_CFG_STR("shards", SLD_CFG_OPT, raw_store_t, shards),
    /* off, on or a mapping: read by config_snapshot.c */
    CYAML_FIELD_IGNORE("snapshot", SLD_CFG_OPT),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t config_fields[] = {
    /* its keys are the ones fronts registered (listen.c) */
    CYAML_FIELD_MAPPING_PTR("listen", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_config_t, listen,
                            sld__cfg_listen_fields),
    SLD_CFG_STR("threads", SLD_CFG_OPT, raw_config_t, threads),
    CYAML_FIELD_MAPPING_PTR("limits", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_config_t, limits, limits_fields),
    CYAML_FIELD_MAPPING_PTR("store", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_config_t, store, store_fields),
    CYAML_FIELD_SEQUENCE("trusted_proxies", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_config_t, trusted_proxies,
                         &sld_config_string_entry, 0, MAX_TRUSTED_PROXIES),
    SLD_CFG_STR("ipv6_prefix", SLD_CFG_OPT, raw_config_t, ipv6_prefix),
    SLD_CFG_STR("user_header", SLD_CFG_OPT, raw_config_t, user_header),
    /* (the registered secrets go here: SLD_CFG_SECRETS_BEFORE) */
    SLD_CFG_STR("auth_deny_status", SLD_CFG_OPT, raw_config_t, auth_deny_status),
    CYAML_FIELD_SEQUENCE("policies", SLD_CFG_NULLABLE, raw_config_t, policies, &policy_entry, 0,
                         MAX_POLICIES),
    CYAML_FIELD_END,
};

const cyaml_schema_value_t sld__cfg_schema = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, raw_config_t, config_fields),
};


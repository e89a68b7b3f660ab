//! settings.kubernetes of a Bottlerocket node's user data, taken as
//! Bottlerocket takes it: the TOML parsed by toml_edit (the parser of the
//! toml crate Bottlerocket uses), turned into JSON, the settings table
//! decoded by serde into the settings model's kubernetes types — stated
//! here from bottlerocket-settings-sdk's KubernetesSettingsV1 and its
//! modeled types: kebab-case, unknown fields refused, each string type
//! checked by its rule.
//!
//! Reads a JSON list of user data (strings) on stdin; writes a JSON list
//! of {"kubernetes": <the table as decoded>} or {"error": "..."}.
use regex::Regex;
use serde::de::{self, Deserializer};
use serde::Deserialize;
use std::collections::HashMap;
use std::io::Read;

fn control_free(s: &str) -> Result<(), String> {
    match s.chars().find(|c| c.is_control() || *c == '\u{2028}' || *c == '\u{2029}') {
        Some(c) => Err(format!("control character {:?}", c)),
        None => Ok(()),
    }
}

fn re(pattern: &str, s: &str, what: &str) -> Result<(), String> {
    if Regex::new(pattern).unwrap().is_match(s) { Ok(()) } else { Err(format!("{:?} is not {}", s, what)) }
}

fn one_of(values: &[&str], s: &str) -> Result<(), String> {
    if values.contains(&s) { Ok(()) } else { Err(format!("{:?} is not one of {:?}", s, values)) }
}

const NAME: &str = r"[[:alnum:]](([[:alnum:]._-]{0,61})?[[:alnum:]])?";
const QUANTITY: &str = r"^([+-]?[0-9.]+)((e)?[0-9]*)$|^([+-]?[0-9.]+)((E|P|T|G|M|K)i?)?$|^([+-]?[0-9.]+)(n|u|m|k)?$";
const DURATION: &str = r"^(([0-9]+\.)?[0-9]+h)?(([0-9]+\.)?[0-9]+m)?(([0-9]+\.)?[0-9]+s)?(([0-9]+\.)?[0-9]+ms)?$";

/// A string type with a rule, deserialized only from a string.
macro_rules! string_type {
    ($name:ident, $check:expr) => {
        #[derive(Debug, serde::Serialize)]
        struct $name(String);
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                let check: fn(&str) -> Result<(), String> = $check;
                check(&s).map_err(de::Error::custom)?;
                Ok($name(s))
            }
        }
    };
}

string_type!(ClusterName, |s| re(r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$", s, "a cluster name"));
string_type!(ValidBase64, |s| {
    control_free(s)?;
    let valid = s.len() % 4 == 0
        && s.bytes().enumerate().all(|(i, b)| b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || (b == b'=' && i >= s.len().saturating_sub(2)))
        && !(s.ends_with('=') && !s.ends_with("==") && s[..s.len() - 1].contains('='));
    if valid && padding_bits_zero(s) { Ok(()) } else { Err(format!("{:?} is not base64", s)) }
});
string_type!(Url, |s| {
    control_free(s)?;
    let t = s.trim();
    if url_like(t) || url_like(&format!("http://{}", t)) { Ok(()) } else { Err(format!("{:?} is not a URL", s)) }
});
string_type!(LabelKey, |s| re(&format!(r"^([[:alnum:].-]{{1,253}}/)?{}$", NAME), s, "a label key"));
string_type!(LabelValue, |s| re(&format!(r"^$|^{}$", NAME), s, "a label value"));
string_type!(TaintValue, |s| re(&format!(r"^({})?:[[:alnum:]]{{1,253}}$", NAME), s, "a taint value"));
string_type!(Identifier, |s| if s.len() <= 76 && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') { Ok(()) } else { Err(format!("{:?} is not an identifier", s)) });
string_type!(AuthMode, |s| one_of(&["aws", "tls"], s));
string_type!(BootstrapToken, |s| re(r"^[a-z0-9]{6}\.[a-z0-9]{16}$", s, "a bootstrap token"));
string_type!(EvictionKey, |s| one_of(&["memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree", "pid.available"], s));
string_type!(Threshold, |s| match s.strip_suffix('%') {
    Some(n) => match n.parse::<f32>() {
        Ok(f) if (0.0..100.0).contains(&f) => Ok(()),
        _ => Err(format!("{:?} is not a percentage below 100", s)),
    },
    None => re(QUANTITY, s, "a quantity"),
});
string_type!(Duration, |s| if s.is_empty() { Err("empty duration".into()) } else { re(DURATION, s, "a duration") });
string_type!(ReservedKey, |s| one_of(&["cpu", "memory", "ephemeral-storage"], s));
string_type!(Quantity, |s| re(QUANTITY, s, "a quantity"));
string_type!(SingleLine, |s| {
    control_free(s)?;
    if s.contains(|c| matches!(c, '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{85}')) { Err("a line break".into()) } else { Ok(()) }
});
string_type!(CloudProvider, |s| one_of(&["aws", "external", "", "\"\""], s));
string_type!(CpuManagerPolicy, |s| one_of(&["static", "Static", "none", "None"], s));
string_type!(CpuManagerPolicyOption, |s| one_of(&["full-pcpus-only", "distribute-cpus-across-numa", "prefer-align-cpus-by-uncorecache", "strict-cpu-reservation"], s));
string_type!(TopologyScope, |s| one_of(&["container", "pod"], s));
string_type!(TopologyPolicy, |s| one_of(&["none", "restricted", "best-effort", "single-numa-node"], s));
string_type!(MemoryPolicy, |s| one_of(&["Static", "static", "None", "none"], s));
string_type!(CpuSet, |s| { control_free(s)?; re(r"^([0-9]+(-[0-9]+)?,?)*([0-9]+(-[0-9]+)?)+$", s, "a CPU set") });
string_type!(SwapBehavior, |s| one_of(&["NoSwap", "no-swap", "LimitedSwap", "limited-swap"], s));
string_type!(HostnameSource, |s| one_of(&["private-dns-name", "instance-id"], s));
string_type!(IpAddr, |s| s.parse::<std::net::IpAddr>().map(|_| ()).map_err(|e| format!("{:?}: {}", s, e)));
string_type!(DnsDomain, |s| {
    control_free(s)?;
    let last = s.trim_end_matches('.').rsplit('.').next().unwrap_or("");
    if s.is_empty() || s.starts_with('.') || last.parse::<u64>().is_ok() || s.trim_matches(|c| c == '[' || c == ']').parse::<std::net::IpAddr>().is_ok()
        || s.trim_end_matches('.').split('.').any(|l| l.is_empty() || l.contains(|c: char| " #%/:<>?@[\\]^|".contains(c))) {
        Err(format!("{:?} is not a domain", s))
    } else { Ok(()) }
});
string_type!(LinuxHostname, |s| {
    control_free(s)?;
    re(r"^[0-9a-z.-]{1,253}$", s, "a host name")?;
    if s.starts_with('-') || s.starts_with('.') || s.split('.').any(|l| l.is_empty() || l.len() > 63 || l.starts_with('-')) { Err(format!("{:?} is not a host name", s)) } else { Ok(()) }
});

fn padding_bits_zero(s: &str) -> bool {
    let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let body = s.trim_end_matches('=');
    let pads = s.len() - body.len();
    match (pads, body.chars().last()) {
        (0, _) | (_, None) => true,
        (1, Some(c)) => alphabet.find(c).map_or(false, |i| i & 0b11 == 0),
        (2, Some(c)) => alphabet.find(c).map_or(false, |i| i & 0b1111 == 0),
        _ => false,
    }
}

/// A URL as a parser with schemes reads it: a scheme, and for http and
/// https a host (a name, or an address).
fn url_like(s: &str) -> bool {
    let (scheme, rest) = match s.split_once(':') { Some(x) => x, None => return false };
    let scheme_ok = scheme.chars().next().map_or(false, |c| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    if !scheme_ok { return false; }
    if scheme != "http" && scheme != "https" { return !rest.contains(' '); }
    let after = match rest.strip_prefix("//") { Some(a) => a, None => return false };
    let authority = after.split(|c| c == '/' || c == '?' || c == '#').next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let host = match host_port.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) && !h.contains(']') || host_port.starts_with('[') && port.chars().all(|c| c.is_ascii_digit()) => h,
        _ => host_port,
    };
    if host.is_empty() || host.contains(|c: char| " <>^|%\\\"".contains(c)) || s.contains(' ') { return false; }
    if host.chars().all(|c| c.is_ascii_digit() || c == '.') { return host.trim_matches('[').parse::<std::net::Ipv4Addr>().is_ok(); }
    true
}

#[derive(Debug, serde::Serialize)]
struct IntegerPercent(i32);
impl<'de> Deserialize<'de> for IntegerPercent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let text = match &v {
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::String(s) => s.clone(),
            other => return Err(de::Error::custom(format!("{} is not an integer percentage", other))),
        };
        match text.parse::<i32>() {
            Ok(i) if (0..=100).contains(&i) => Ok(IntegerPercent(i)),
            _ => Err(de::Error::custom(format!("{:?} is not an integer percentage", text))),
        }
    }
}

#[derive(Debug, serde::Serialize)]
struct NonNegative(i32);
impl<'de> Deserialize<'de> for NonNegative {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let i = i32::deserialize(d)?;
        if i < 0 { return Err(de::Error::custom("negative")); }
        Ok(NonNegative(i))
    }
}

#[derive(Debug, serde::Serialize)]
struct IdsPerPod(i64);
impl<'de> Deserialize<'de> for IdsPerPod {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let i = i64::deserialize(d)?;
        if i % 65536 != 0 || i >= 1 << 32 { return Err(de::Error::custom("not a multiple of 65536 below 2^32")); }
        Ok(IdsPerPod(i))
    }
}

#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(untagged)]
enum ClusterDnsIp { Scalar(IpAddr), Vector(Vec<IpAddr>) }

#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct StaticPod { enabled: Option<bool>, manifest: Option<ValidBase64> }

#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
struct CredentialProvider {
    enabled: bool,
    image_patterns: Vec<SingleLine>,
    cache_duration: Option<Duration>,
    environment: Option<HashMap<SingleLine, SingleLine>>,
}

#[derive(Debug, serde::Serialize)]
struct MemoryReservation(serde_json::Value);
impl<'de> Deserialize<'de> for MemoryReservation {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        match v.get("enabled") {
            Some(serde_json::Value::Bool(_)) => {}
            _ => return Err(de::Error::custom("enabled is missing or not a boolean")),
        }
        for (k, x) in &v {
            match k.as_str() {
                "enabled" => {}
                "memory" | "hugepages-2Mi" | "hugepages-1Gi" => { Quantity::deserialize(x.clone()).map_err(de::Error::custom)?; }
                other => return Err(de::Error::custom(format!("unknown field {}", other))),
            }
        }
        Ok(MemoryReservation(serde_json::Value::Object(v)))
    }
}

impl std::hash::Hash for LabelKey { fn hash<H: std::hash::Hasher>(&self, h: &mut H) { self.0.hash(h) } }
impl PartialEq for LabelKey { fn eq(&self, o: &Self) -> bool { self.0 == o.0 } }
impl Eq for LabelKey {}
impl std::hash::Hash for Identifier { fn hash<H: std::hash::Hasher>(&self, h: &mut H) { self.0.hash(h) } }
impl PartialEq for Identifier { fn eq(&self, o: &Self) -> bool { self.0 == o.0 } }
impl Eq for Identifier {}
impl std::hash::Hash for EvictionKey { fn hash<H: std::hash::Hasher>(&self, h: &mut H) { self.0.hash(h) } }
impl PartialEq for EvictionKey { fn eq(&self, o: &Self) -> bool { self.0 == o.0 } }
impl Eq for EvictionKey {}
impl std::hash::Hash for ReservedKey { fn hash<H: std::hash::Hasher>(&self, h: &mut H) { self.0.hash(h) } }
impl PartialEq for ReservedKey { fn eq(&self, o: &Self) -> bool { self.0 == o.0 } }
impl Eq for ReservedKey {}
impl std::hash::Hash for SingleLine { fn hash<H: std::hash::Hasher>(&self, h: &mut H) { self.0.hash(h) } }
impl PartialEq for SingleLine { fn eq(&self, o: &Self) -> bool { self.0 == o.0 } }
impl Eq for SingleLine {}

/// node-taints: a table of label keys to one taint string or a non-empty
/// array of them.
fn node_taints<'de, D: Deserializer<'de>>(d: D) -> Result<Option<HashMap<LabelKey, Vec<TaintValue>>>, D::Error> {
    let m = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
    let mut out = HashMap::new();
    for (k, v) in m {
        let key = LabelKey::deserialize(serde_json::Value::String(k)).map_err(de::Error::custom)?;
        let values = match v {
            serde_json::Value::String(_) => vec![TaintValue::deserialize(v).map_err(de::Error::custom)?],
            serde_json::Value::Array(list) => {
                if list.is_empty() { return Err(de::Error::custom("empty taint value")); }
                list.into_iter().map(|x| TaintValue::deserialize(x).map_err(de::Error::custom)).collect::<Result<Vec<_>, _>>()?
            }
            _ => return Err(de::Error::custom("unsupported taint value type")),
        };
        out.insert(key, values);
    }
    Ok(Some(out))
}

#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct Kubernetes {
    cluster_name: Option<ClusterName>,
    cluster_certificate: Option<ValidBase64>,
    api_server: Option<Url>,
    node_labels: Option<HashMap<LabelKey, LabelValue>>,
    #[serde(default, deserialize_with = "node_taints")]
    node_taints: Option<HashMap<LabelKey, Vec<TaintValue>>>,
    static_pods: Option<HashMap<Identifier, StaticPod>>,
    authentication_mode: Option<AuthMode>,
    bootstrap_token: Option<BootstrapToken>,
    standalone_mode: Option<bool>,
    eviction_hard: Option<HashMap<EvictionKey, Threshold>>,
    eviction_soft: Option<HashMap<EvictionKey, Threshold>>,
    eviction_soft_grace_period: Option<HashMap<EvictionKey, Duration>>,
    eviction_max_pod_grace_period: Option<NonNegative>,
    kube_reserved: Option<HashMap<ReservedKey, Quantity>>,
    system_reserved: Option<HashMap<ReservedKey, Quantity>>,
    allowed_unsafe_sysctls: Option<Vec<SingleLine>>,
    server_tls_bootstrap: Option<bool>,
    cloud_provider: Option<CloudProvider>,
    registry_qps: Option<i32>,
    registry_burst: Option<i32>,
    event_qps: Option<i32>,
    event_burst: Option<i32>,
    kube_api_qps: Option<i32>,
    kube_api_burst: Option<i32>,
    container_log_max_size: Option<Quantity>,
    container_log_max_files: Option<i32>,
    container_log_max_workers: Option<i32>,
    container_log_monitor_interval: Option<Duration>,
    max_parallel_image_pulls: Option<i32>,
    cpu_cfs_quota_enforced: Option<bool>,
    cpu_manager_policy: Option<CpuManagerPolicy>,
    cpu_manager_reconcile_period: Option<Duration>,
    cpu_manager_policy_options: Option<Vec<CpuManagerPolicyOption>>,
    topology_manager_scope: Option<TopologyScope>,
    topology_manager_policy: Option<TopologyPolicy>,
    pod_pids_limit: Option<i64>,
    image_gc_high_threshold_percent: Option<IntegerPercent>,
    image_gc_low_threshold_percent: Option<IntegerPercent>,
    image_minimum_gc_age: Option<Duration>,
    image_maximum_gc_age: Option<Duration>,
    provider_id: Option<Url>,
    log_level: Option<u8>,
    credential_providers: Option<HashMap<Identifier, CredentialProvider>>,
    server_certificate: Option<ValidBase64>,
    server_key: Option<ValidBase64>,
    shutdown_grace_period: Option<Duration>,
    shutdown_grace_period_for_critical_pods: Option<Duration>,
    memory_manager_reserved_memory: Option<HashMap<Identifier, MemoryReservation>>,
    memory_manager_policy: Option<MemoryPolicy>,
    reserved_cpus: Option<CpuSet>,
    memory_swap_behavior: Option<SwapBehavior>,
    hostname_override_source: Option<HostnameSource>,
    seccomp_default: Option<bool>,
    device_ownership_from_security_context: Option<bool>,
    single_process_oom_kill: Option<bool>,
    static_pods_enabled: Option<bool>,
    max_pods: Option<u32>,
    cluster_dns_ip: Option<ClusterDnsIp>,
    cluster_domain: Option<DnsDomain>,
    node_ip: Option<IpAddr>,
    pod_infra_container_image: Option<SingleLine>,
    hostname_override: Option<LinuxHostname>,
    ids_per_pod: Option<IdsPerPod>,
    #[serde(alias = "fail-cgroupv1")]
    fail_cgroup_v1: Option<bool>,
}

const TABLES: &[&str] = &[
    "motd", "kubernetes", "updates", "host-containers", "bootstrap-commands", "bootstrap-containers", "ntp", "network",
    "kernel", "boot", "aws", "metrics", "pki", "container-registry", "oci-defaults", "oci-hooks", "cloudformation", "dns",
    "container-runtime", "autoscaling", "container-runtime-plugins", "image-verifier-plugins",
];

fn take(user_data: &str) -> Result<serde_json::Value, String> {
    let doc: toml_edit::easy::Value = toml_edit::easy::from_str(user_data).map_err(|e| format!("TOML: {}", e))?;
    let json = serde_json::to_value(&doc).map_err(|e| format!("JSON: {}", e))?;
    let settings = json.get("settings").ok_or("no settings table")?;
    let table = settings.as_object().ok_or("settings is not a table")?;
    for (k, v) in table {
        if !TABLES.contains(&k.as_str()) { return Err(format!("unknown settings table {}", k)); }
        if !v.is_object() && k != "motd" { return Err(format!("settings.{} is not a table", k)); }
    }
    if let Some(sysctl) = table.get("kernel").and_then(|k| k.get("sysctl")) {
        // settings.kernel.sysctl: its values are strings.
        let _: HashMap<String, SingleLine> = serde_json::from_value(sysctl.clone()).map_err(|e| format!("settings.kernel.sysctl: {}", e))?;
    }
    let k8s = match table.get("kubernetes") { Some(k) => k, None => return Ok(serde_json::json!({})) };
    let decoded: Kubernetes = serde_json::from_value(k8s.clone()).map_err(|e| format!("settings.kubernetes: {}", e))?;
    let _ = decoded;
    Ok(k8s.clone())
}

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let docs: Vec<String> = serde_json::from_str(&input).unwrap();
    let out: Vec<serde_json::Value> = docs.iter().map(|d| match take(d) {
        Ok(k) => serde_json::json!({ "kubernetes": k }),
        Err(e) => serde_json::json!({ "error": e }),
    }).collect();
    println!("{}", serde_json::to_string(&out).unwrap());
}

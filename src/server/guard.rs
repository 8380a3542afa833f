//! What the daemon's API accepts from whom, before any route runs: it
//! listens on loopback, and every web page a user opens can reach
//! loopback too. So:
//! - the `Host` must name this daemon: `localhost`, a loopback address, the
//!   address it is bound to, or (bound to every interface) any literal IP.
//!   A DNS name that resolves here (DNS rebinding: `evil.example` pointed at
//!   127.0.0.1) is refused;
//! - a request a browser marks as coming from a page is refused, unless
//!   that page's origin is listed in `[server] allowed_origins`: an `Origin`
//!   header, or `Sec-Fetch-Site: cross-site`/`same-site` (an `<img>` GET
//!   carries no `Origin`, but does carry that);
//! - with a token, `Authorization: Bearer <token>`, compared in constant
//!   time, or the cookie the web page's login form set for that token
//!   ([`SESSION_COOKIE`]: HttpOnly, SameSite=Strict, so no other site's
//!   page sends it). The token is asked by every route the router serves
//!   but the login form's own (`/login`, `/m/{name}/login`), which the
//!   router matches; no path is let through because of how it looks.
//!
//! The web page ([`super::page`]) is a page too: its own origin (the
//! `Origin` that names the `Host` it asked) is allowed, so its forms POST,
//! while any other page's POST is refused as above.
//!
//! Clients that are not browsers (curl, the CLI, agents' HTTP libraries)
//! send none of the browser headers and a `Host` of the address they
//! dialled, so they pass.

use std::net::{IpAddr, SocketAddr};

use axum::http::HeaderMap;
use axum::http::header::{AUTHORIZATION, HOST, ORIGIN};

use crate::text::short_hash;

/// The tokens a route asks for: any one of them opens it.
pub(crate) struct Check<'a> {
    /// The daemon's token, and under a root the memory's own (none: no
    /// token is needed).
    pub tokens: Vec<&'a str>,
    /// Whether the daemon serves many memories (for the message).
    pub many: bool,
}

impl Check<'_> {
    /// Why a request with `headers` is refused for want of a token, if it
    /// is.
    pub(crate) fn refuse(&self, headers: &HeaderMap) -> Option<(u16, String)> {
        let opens = |t: &&str| bears(headers, t) || has_session(headers, t);
        if self.tokens.is_empty() || self.tokens.iter().any(opens) {
            return None;
        }
        let msg = match self.many {
            true => {
                "this daemon needs `Authorization: Bearer <token>` (the daemon's, or the memory's own)"
            }
            false => "this daemon needs `Authorization: Bearer <MEMD_TOKEN>`",
        };
        Some((401, msg.into()))
    }
}

/// Why a request is refused as coming from a page or another host, if it
/// is: asked of every request, whatever its route (the login form's
/// included).
pub(crate) fn refuse_page(
    headers: &HeaderMap,
    bound: SocketAddr,
    allowed_origins: &[String],
) -> Option<(u16, String)> {
    let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(host) = headers.get(HOST)
        && !host.to_str().is_ok_and(|h| host_allowed(h, bound))
    {
        let shown = String::from_utf8_lossy(host.as_bytes()).into_owned();
        return Some((
            403,
            format!("Host {shown:?} is not this daemon; use localhost or {bound}"),
        ));
    }
    if let Some(origin) = text(ORIGIN.as_str()) {
        let own = text(HOST.as_str()).is_some_and(|h| same_origin(origin, h));
        if !own && !origin_allowed(origin, allowed_origins) {
            return Some((
                403,
                format!(
                    "requests from web pages are refused (Origin {origin}); list trusted origins in [server] allowed_origins"
                ),
            ));
        }
    } else if let Some(site) = text("sec-fetch-site")
        && !matches!(site, "same-origin" | "none")
    {
        return Some((
            403,
            format!("requests from web pages are refused (Sec-Fetch-Site: {site})"),
        ));
    }
    None
}

/// Whether the request carries `Authorization: Bearer <token>` (compared
/// in constant time).
fn bears(headers: &HeaderMap, token: &str) -> bool {
    let sent = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    sent.is_some_and(|s| same(s.as_bytes(), token.as_bytes()))
}

/// Whether a `Host` header (`name[:port]`, `[v6]:port`) names this daemon.
fn host_allowed(host: &str, bound: SocketAddr) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(n, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                n
            } else {
                host
            }
        }),
    };
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match name.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback() || ip == bound.ip() || bound.ip().is_unspecified(),
        Err(_) => false,
    }
}

fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    let origin = origin.trim_end_matches('/');
    allowed
        .iter()
        .any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(origin))
}

/// Whether `origin` is the page's own: `http://` or `https://` and the
/// `Host` the request was sent to (which the check above found to name
/// this daemon).
fn same_origin(origin: &str, host: &str) -> bool {
    let origin = origin.trim_end_matches('/');
    ["http://", "https://"].iter().any(|s| {
        origin
            .strip_prefix(s)
            .is_some_and(|o| o.eq_ignore_ascii_case(host))
    })
}

/// The name of the web page's login cookie.
pub(crate) const SESSION_COOKIE: &str = "memd_session";

/// The login cookie's value for `token`: a hash of it, so the cookie
/// never holds the token itself.
pub(crate) fn session_of(token: &str) -> String {
    short_hash(&format!("memd page session\n{token}"), 64)
}

/// Whether the request carries the login cookie of `token`.
fn has_session(headers: &HeaderMap, token: &str) -> bool {
    let want = session_of(token);
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().strip_prefix(SESSION_COOKIE)?.strip_prefix('='))
        .any(|v| same(v.as_bytes(), want.as_bytes()))
}

/// Equality that takes as long whatever the first differing byte (the
/// length is not secret).
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

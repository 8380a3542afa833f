//! Where the index's table lives: in the memory (`.memd/index/lance`, the
//! default) or on object storage (`[index] uri = "s3://bucket/prefix"`).
//!
//! **On object storage** the table of the memory in directory `NAME` is
//! `URI/NAME` (a root's memories are its directories, so a memory keeps
//! its table when it moves to another node; two memories that share a
//! bucket prefix need distinct directory names). Only the table moves
//! there: the rest of `.memd/index/` (which embedder built it, each
//! file's fingerprint, the words file) stays in the memory, and moves
//! with it.
//!
//! - **Who writes it.** The index lock (`.memd/index.lock`) keeps two
//!   processes of one machine from writing a table at once; it cannot
//!   reach another machine. On object storage that job is the
//!   deployment's: one node serves a memory at a time (routing by name,
//!   a handover that drains and closes the memory before another node
//!   takes it over: deploy/README.md). LanceDB commits each version with
//!   a conditional put (`If-None-Match: *`), so two writers that met
//!   anyway would have one commit refused, never a table overwritten.
//! - **Credentials and endpoint** come from the environment only
//!   (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
//!   `AWS_REGION`, `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`: object_store's
//!   `AmazonS3Builder::from_env`), never from `memd.toml`, which `memd
//!   sync` may push. Under a root the URI is the root's: a memory's own
//!   `[index] uri` must be the root's or absent
//!   ([`crate::server::tenant::allowed`]).
//! - **A store that does not answer** fails the request that needed the
//!   table, after [`RETRIES`] retries within [`RETRY_WINDOW`]; facts are
//!   appended to the files first, so none is lost, and the next sync
//!   indexes them.
//!
//! memd puts its own S3 store in LanceDB's store registry ([`S3`]) in
//! place of LanceDB's `aws` feature, which would build the AWS SDK and
//! OpenDAL into every memd: object_store's S3 client, signing with ring,
//! sending through memd's reqwest ([`Http`]).

use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use lance_io::object_store::{
    DEFAULT_CLOUD_IO_PARALLELISM, ObjectStore, ObjectStoreParams, ObjectStoreProvider,
    ObjectStoreRegistry,
};
use object_store::RetryConfig;
use object_store::aws::AmazonS3Builder;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse,
    HttpResponseBody, HttpService,
};

use crate::Layout;
use crate::error::{Error, Result, bail};

/// Retries of a request the store did not answer (a refused connection,
/// a timeout, a 5xx) before the request that needed it fails.
pub const RETRIES: usize = 3;
/// How long a request is retried at most. object_store's own default
/// (3 minutes, 10 retries) would hold a search that long on a store that
/// is down; a search that fails in seconds says so instead.
pub const RETRY_WINDOW: Duration = Duration::from_secs(10);
/// One request's longest wait for the store, connection included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The session's caches, at most: LanceDB's defaults
/// (`lance::dataset::DEFAULT_INDEX_CACHE_SIZE`, `DEFAULT_METADATA_CACHE_SIZE`),
/// shared by every memory of the process whose table is on object storage.
const INDEX_CACHE_BYTES: usize = 6 << 30;
const METADATA_CACHE_BYTES: usize = 1 << 30;
/// Reads a missing object again this many times ([`ObjectStore::new`]).
const DOWNLOAD_RETRIES: usize = 3;

/// Where `layout`'s table lives: a URI LanceDB opens.
pub(crate) fn uri(layout: &Layout) -> Result<String> {
    match layout.index_uri() {
        Some(uri) => Ok(uri.to_string()),
        None => {
            let lance = layout.lance_dir();
            match lance.to_str() {
                Some(s) => Ok(s.to_string()),
                None => bail!("index path {} is not UTF-8", lance.display()),
            }
        }
    }
}

/// `Ok` when `uri` may be an `[index] uri`: empty (the memory's own
/// directory) or `s3://BUCKET[/PREFIX]`.
pub fn check_uri(uri: &str) -> Result<()> {
    if uri.is_empty() {
        return Ok(());
    }
    let Some(rest) = uri.strip_prefix("s3://") else {
        bail!("[index] uri {uri:?}: only s3://BUCKET[/PREFIX] is supported (empty: in the memory)");
    };
    let bucket = rest.split('/').next().unwrap_or("");
    if bucket.is_empty() || uri.contains(['?', '#']) || uri.contains("/../") {
        bail!("[index] uri {uri:?}: expected s3://BUCKET[/PREFIX], without a query");
    }
    Ok(())
}

/// The table of the memory at `dir` under `[index] uri` `prefix`.
/// (`.` or `..` is named by the directory it stands for.)
pub(crate) fn table_uri(prefix: &str, dir: &std::path::Path) -> Option<String> {
    let named = |d: &std::path::Path| Some(d.file_name()?.to_str()?.to_string());
    let name = named(dir).or_else(|| named(&dir.canonicalize().ok()?))?;
    Some(format!("{}/{name}", prefix.trim_end_matches('/')))
}

/// A connection to `layout`'s table's database.
pub(super) async fn connect(layout: &Layout) -> Result<lancedb::Connection> {
    let mut connecting = lancedb::connect(&uri(layout)?);
    if layout.index_uri().is_some() {
        connecting = connecting.session(session());
    }
    connecting.execute().await.map_err(|e| failed(layout, e))
}

/// LanceDB's error `e` about `layout`'s table, as memd says it: on object
/// storage, what to do about it ([`unreachable`]).
pub(super) fn failed(layout: &Layout, e: lancedb::Error) -> Error {
    match layout.index_uri() {
        Some(uri) => unreachable(uri, &e),
        None => e.into(),
    }
}

/// A failure to reach the table at `uri` on object storage, said as what
/// to do about it (LanceDB's own error is its debug print, pages long).
fn unreachable(uri: &str, e: &dyn std::fmt::Display) -> Error {
    let text = e.to_string();
    let has = |needles: &[&str]| needles.iter().any(|n| text.contains(n));
    let endpoint = ["AWS_ENDPOINT_URL", "AWS_ENDPOINT"]
        .iter()
        .find_map(|v| std::env::var(v).ok())
        .unwrap_or_else(|| "S3".into());
    let why = if has(&[
        "Connection refused",
        "tcp connect error",
        "dns error",
        "timed out",
    ]) {
        format!("the object store at {endpoint} does not answer")
    } else if has(&["NoSuchBucket"]) {
        "its bucket does not exist".to_string()
    } else if has(&[
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "AccessDenied",
        "403",
    ]) {
        "the object store refused the credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
            .to_string()
    } else {
        text.chars().take(300).collect()
    };
    Error::Service(format!(
        "the index's table at {uri}: {why} (facts are kept in the files; the index catches up once the store answers)"
    ))
}

/// A LanceDB session whose registry opens `s3://` with [`S3`].
fn session() -> Arc<lancedb::Session> {
    static SESSION: std::sync::OnceLock<Arc<lancedb::Session>> = std::sync::OnceLock::new();
    SESSION
        .get_or_init(|| {
            let registry = ObjectStoreRegistry::default();
            registry.insert("s3", Arc::new(S3));
            Arc::new(lancedb::Session::new(
                INDEX_CACHE_BYTES,
                METADATA_CACHE_BYTES,
                Arc::new(registry),
            ))
        })
        .clone()
}

/// memd's S3 store for LanceDB (see the module doc).
#[derive(Debug)]
struct S3;

#[async_trait::async_trait]
impl ObjectStoreProvider for S3 {
    async fn new_store(
        &self,
        base: url::Url,
        params: &ObjectStoreParams,
    ) -> lance_core::Result<ObjectStore> {
        let store = AmazonS3Builder::from_env()
            .with_url(base.as_str())
            .with_http_connector(Connector)
            .with_retry(RetryConfig {
                max_retries: RETRIES,
                retry_timeout: RETRY_WINDOW,
                backoff: Default::default(),
            })
            .build()?;
        Ok(ObjectStore::new(
            Arc::new(store),
            base,
            params.block_size,
            params.object_store_wrapper.clone(),
            false,
            true,
            DEFAULT_CLOUD_IO_PARALLELISM,
            DOWNLOAD_RETRIES,
            params.storage_options(),
        ))
    }
}

/// Makes [`Http`] clients for object_store.
#[derive(Debug)]
struct Connector;

impl HttpConnector for Connector {
    fn connect(&self, _: &object_store::ClientOptions) -> object_store::Result<HttpClient> {
        static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
        let client = CLIENT.get_or_init(|| {
            reqwest::Client::builder()
                .timeout(REQUEST_TIMEOUT)
                .connect_timeout(REQUEST_TIMEOUT)
                .build()
                .unwrap_or_default()
        });
        Ok(HttpClient::new(Http(client.clone())))
    }
}

/// object_store's requests, sent with memd's reqwest client. Bodies are
/// whole in memory: LanceDB writes files of a few MB and reads ranges.
#[derive(Debug)]
struct Http(reqwest::Client);

#[async_trait::async_trait]
impl HttpService for Http {
    async fn call(&self, req: HttpRequest) -> std::result::Result<HttpResponse, HttpError> {
        let (parts, body) = req.into_parts();
        let body = body.collect().await?.to_bytes();
        let sent = self
            .0
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body)
            .send()
            .await
            .map_err(http_failed)?;
        let (status, headers) = (sent.status(), sent.headers().clone());
        let bytes = sent.bytes().await.map_err(http_failed)?;
        let mut reply = HttpResponse::new(HttpResponseBody::from(bytes));
        *reply.status_mut() = status;
        *reply.headers_mut() = headers;
        Ok(reply)
    }
}

/// A reqwest error as object_store's kind, which decides its retries.
fn http_failed(e: reqwest::Error) -> HttpError {
    let kind = if e.is_connect() {
        HttpErrorKind::Connect
    } else if e.is_timeout() {
        HttpErrorKind::Timeout
    } else if e.is_body() || e.is_decode() {
        HttpErrorKind::Decode
    } else {
        HttpErrorKind::Request
    };
    HttpError::new(kind, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_s3_bucket_or_nothing_is_an_index_uri() {
        for ok in ["", "s3://bucket", "s3://bucket/", "s3://bucket/a/b"] {
            assert!(check_uri(ok).is_ok(), "{ok}");
        }
        for bad in [
            "/tmp/x",
            "file:///tmp/x",
            "gs://bucket",
            "s3://",
            "s3:///x",
            "s3://b/x?ddbTableName=t",
            "s3://b/../c",
        ] {
            assert!(check_uri(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_memory_s_table_is_its_directory_name_under_the_uri() {
        let dir = std::path::Path::new("/srv/root/alice");
        assert_eq!(
            table_uri("s3://b/p/", dir).as_deref(),
            Some("s3://b/p/alice")
        );
        assert_eq!(table_uri("s3://b", dir).as_deref(), Some("s3://b/alice"));
    }
}

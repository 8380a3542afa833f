//! `memd serve [--listen ADDR]` / `memd serve --root DIR [--max-open N]
//! [--tokens FILE]`: bind the address (a non-loopback one needs a token)
//! and run the daemon, for one memory directory or for every one under
//! DIR, until SIGINT or SIGTERM.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;

use anyhow::{Context, Result, bail};

use memd::Layout;
use memd::config::Config;

#[derive(clap::Args)]
pub struct Args {
    /// Address to listen on (default: [server] listen, 127.0.0.1:7437).
    /// A non-loopback address needs MEMD_TOKEN.
    #[arg(long)]
    listen: Option<String>,
    /// Serve every memory directory under DIR (one per user or agent) at
    /// /v1/m/NAME/…; a memory is created by its first write. DIR/memd.toml,
    /// if present, is the daemon's configuration and new memories' template.
    #[arg(long, value_name = "DIR")]
    root: Option<std::path::PathBuf>,
    /// With --root: the most memories open at once (the least recently
    /// used is closed past it, and reopened on its next request).
    #[arg(long, default_value_t = 64, requires = "root")]
    max_open: usize,
    /// With --root: a TOML file of `NAME = "TOKEN"` lines; a memory's token
    /// opens that memory's routes alone.
    #[arg(long, value_name = "FILE", requires = "root")]
    tokens: Option<std::path::PathBuf>,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    if let Some(root) = args.root.clone() {
        let config = Config::load(&root)?;
        return super::runtime()?.block_on(serve_root(&root, config, args));
    }
    let (layout, config) = super::open(dir)?;
    super::runtime()?.block_on(serve(layout, config, args.listen))
}

/// The address to listen on, refused when it is not loopback and no token
/// guards it.
async fn address(listen: &str, guarded: bool) -> Result<SocketAddr> {
    let addr: SocketAddr = tokio::net::lookup_host(listen)
        .await
        .with_context(|| format!("cannot resolve listen address {listen:?}"))?
        .next()
        .with_context(|| format!("{listen:?} resolves to no address"))?;
    if !addr.ip().is_loopback() && !guarded {
        bail!(
            "refusing to listen on {addr} without a token: set MEMD_TOKEN (every request must then send `Authorization: Bearer <token>`), or listen on 127.0.0.1"
        );
    }
    Ok(addr)
}

/// Bind `addr` and say where memd serves `what`.
async fn bind(addr: SocketAddr, what: &str) -> Result<tokio::net::TcpListener> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    eprintln!("memd: serving {what} on http://{}", listener.local_addr()?);
    Ok(listener)
}

/// Resolves on SIGINT or SIGTERM.
async fn signalled() {
    let name = memd::shutdown::signal().await;
    tracing::info!("{name}: shutting down");
}

fn token() -> Option<String> {
    std::env::var("MEMD_TOKEN").ok().filter(|t| !t.is_empty())
}

async fn serve_root(root: &Path, config: Config, args: Args) -> Result<()> {
    let listen = args.listen.unwrap_or_else(|| config.server.listen.clone());
    let tokens: HashMap<String, String> = match &args.tokens {
        None => HashMap::new(),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            toml::from_str(&text)
                .with_context(|| format!("{}: want NAME = \"TOKEN\" lines", path.display()))?
        }
    };
    for name in tokens.keys() {
        memd::memories::check_name(name)?;
    }
    // Without the daemon's token, a memory's token guards only its own
    // routes, so the rest is open: loopback only.
    let token = token();
    let addr = address(&listen, token.is_some()).await?;
    std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
    let what = format!("the memories under {}", root.display());
    let listener = bind(addr, &what).await?;
    let opts = memd::daemon::many::Options {
        token,
        tokens,
        max_open: args.max_open,
    };
    memd::daemon::many::serve(root, config, listener, opts, signalled()).await?;
    eprintln!("memd: stopped");
    Ok(())
}

async fn serve(layout: Layout, config: Config, listen: Option<String>) -> Result<()> {
    let listen = listen.unwrap_or_else(|| config.server.listen.clone());
    let token = token();
    let addr = address(&listen, token.is_some()).await?;
    // Said before binding, so a second daemon on the same port is told why.
    memd::daemon::ensure_not_served(&layout)?;
    let listener = bind(addr, &layout.root.display().to_string()).await?;
    memd::daemon::serve(layout, config, listener, token, signalled()).await?;
    eprintln!("memd: stopped");
    Ok(())
}

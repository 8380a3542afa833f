//! `memd serve [--listen ADDR]`: bind the address (a non-loopback one
//! needs a token) and run the daemon until SIGINT or SIGTERM.

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
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let (layout, config) = super::open(dir)?;
    super::runtime()?.block_on(serve(layout, config, args.listen))
}

async fn serve(layout: Layout, config: Config, listen: Option<String>) -> Result<()> {
    let listen = listen.unwrap_or_else(|| config.server.listen.clone());
    let token = std::env::var("MEMD_TOKEN").ok().filter(|t| !t.is_empty());
    let addr: SocketAddr = tokio::net::lookup_host(&listen)
        .await
        .with_context(|| format!("cannot resolve listen address {listen:?}"))?
        .next()
        .with_context(|| format!("{listen:?} resolves to no address"))?;
    if !addr.ip().is_loopback() && token.is_none() {
        bail!(
            "refusing to listen on {addr} without a token: set MEMD_TOKEN (every request must then send `Authorization: Bearer <token>`), or listen on 127.0.0.1"
        );
    }
    // Said before binding, so a second daemon on the same port is told why.
    memd::daemon::ensure_not_served(&layout)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    eprintln!("memd: serving {} on http://{local}", layout.root.display());
    let shutdown = async {
        let name = memd::shutdown::signal().await;
        tracing::info!("{name}: shutting down");
    };
    memd::daemon::serve(layout, config, listener, token, shutdown).await?;
    eprintln!("memd: stopped");
    Ok(())
}

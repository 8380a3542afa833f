//! `memd serve [--listen ADDR]` / `memd serve --root DIR [--max-open N]
//! [--tokens FILE]`: bind the address (a non-loopback one needs a token)
//! and run the daemon, for one memory directory or for every one under
//! DIR, until SIGINT or SIGTERM.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;

use anyhow::{Context, Result, bail};

use memd::config::Config;
use memd::server::{Options, Served};

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
    let token = std::env::var("MEMD_TOKEN").ok().filter(|t| !t.is_empty());
    let tokens = tokens(args.tokens.as_deref())?;
    let served = match args.root {
        Some(root) => {
            let config = Config::load(&root)?;
            Served::Root { dir: root, config }
        }
        None => Served::One(memd::Memory::open(dir)?),
    };
    // Before binding: a daemon that cannot embed would acknowledge posts
    // it cannot search.
    let embedder = match &served {
        Served::Root { config, .. } => &config.embedder,
        Served::One(memory) => &memory.config.embedder,
    };
    if let Some(why) = memd::embed::missing(embedder) {
        bail!("memd serve did not start: {why}");
    }
    let opts = Options {
        token,
        tokens,
        max_open: args.max_open,
    };
    super::runtime()?.block_on(serve(served, args.listen, opts))
}

/// The `--tokens` file: `NAME = "TOKEN"` lines, each name checked.
fn tokens(path: Option<&Path>) -> Result<HashMap<String, String>> {
    let Some(path) = path else {
        return Ok(HashMap::new());
    };
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let tokens: HashMap<String, String> = toml::from_str(&text)
        .with_context(|| format!("{}: want NAME = \"TOKEN\" lines", path.display()))?;
    // Names are one memory however they are cased (see server::tenant).
    let mut folded = HashMap::new();
    for (name, token) in tokens {
        let key = memd::server::tenant::canonical(&name)?;
        if folded.insert(key, token).is_some() {
            bail!(
                "{}: {name:?} is named twice (names are case-folded)",
                path.display()
            );
        }
    }
    Ok(folded)
}

/// The address to listen on, refused when it is not loopback and no token
/// guards it. Under a root, a memory's token guards only its own routes,
/// so without the daemon's token the rest is open: loopback only.
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

async fn serve(served: Served, listen: Option<String>, opts: Options) -> Result<()> {
    let (config, what) = match &served {
        Served::One(memory) => {
            // Said before binding, so a second daemon on the same port is
            // told why.
            memd::server::ensure_not_served(&memory.layout)?;
            (&memory.config, memory.layout.root.display().to_string())
        }
        Served::Root { dir, config } => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            (config, format!("the memories under {}", dir.display()))
        }
    };
    let listen = listen.unwrap_or_else(|| config.server.listen.clone());
    let addr = address(&listen, opts.token.is_some()).await?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    eprintln!("memd: serving {what} on http://{}", listener.local_addr()?);
    let signalled = async {
        let name = memd::server::shutdown::signal().await;
        tracing::info!("{name}: shutting down");
    };
    memd::server::serve(served, listener, opts, signalled).await?;
    eprintln!("memd: stopped");
    Ok(())
}

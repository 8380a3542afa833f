//! Review: proposals decided and applied through each way in, the
//! daemon's page, and REVIEW.md edited by hand.

use super::World;
use crate::random::actions::Via;

impl World {
    /// An open proposal, picked.
    fn proposal(&self, pick: u8) -> Option<memd::ids::ProposalId> {
        let open = memd::review::list(&self.layout).ok()?.open;
        let i = pick as usize % open.len().max(1);
        open.get(i).map(|o| o.item.clone())
    }

    pub(super) fn review_decide(
        &mut self,
        via: Via,
        pick: u8,
        accept: bool,
        apply: bool,
    ) -> anyhow::Result<()> {
        let Some(id) = self.proposal(pick) else {
            return Ok(());
        };
        let reviewed = match via {
            Via::Cli => {
                let mut args = vec![
                    "review",
                    if accept { "accept" } else { "reject" },
                    &id,
                    "--json",
                ];
                if apply {
                    args.push("--apply");
                }
                self.cli_review(&args)?
            }
            _ => self.run(memd::request::Review {
                action: match accept {
                    true => memd::request::ReviewAction::Accept,
                    false => memd::request::ReviewAction::Reject,
                },
                ids: vec![id],
                all: false,
                apply,
            })?,
        };
        if let Some(c) = &reviewed.carried {
            self.carried(c);
        }
        Ok(())
    }

    pub(super) fn review_apply(&mut self, via: Via) -> anyhow::Result<()> {
        let reviewed = match via {
            Via::Cli => self.cli_review(&["review", "apply", "--json"])?,
            _ => self.run(memd::request::Review::default())?,
        };
        if let Some(c) = &reviewed.carried {
            self.carried(c);
        }
        Ok(())
    }

    fn cli_review(&self, args: &[&str]) -> anyhow::Result<memd::request::Reviewed> {
        let out = crate::support::memd(&self.layout.root, args);
        anyhow::ensure!(out.status.success(), "{}", crate::support::stderr(&out));
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    /// A decision carried out: each fact of a rejected op it kept is held
    /// by an entry saying it word for word: as its text, or as the
    /// history of an update the same run then made of that entry (a fact
    /// pending beside the decision that supersedes it, or that the
    /// built-in judge reads as its update: the person rejected the op,
    /// not what the agent said after).
    pub(super) fn carried(&self, c: &memd::review::Carried) {
        let doc = self.doc();
        for f in &c.kept_verbatim {
            let text = self.fact_text(f).unwrap_or_default();
            let said = memd::text::normalize(&text);
            let held = doc.entries().any(|e| {
                let now = memd::update::current_part(&e.text);
                let history = &e.text[now.len()..];
                e.meta.as_ref().is_some_and(|m| m.sources.contains(f))
                    && (memd::text::normalize(&e.text) == said
                        || memd::text::normalize(history).contains(&said))
            });
            let entries = || -> Vec<String> {
                doc.entries()
                    .map(|e| {
                        format!(
                            "  {:?} from {:?}",
                            e.text,
                            e.meta.as_ref().map(|m| &m.sources)
                        )
                    })
                    .collect()
            };
            assert!(
                held,
                "rejected op's fact {f} ({text:?}) is not kept word for word; the entries:\n{}\nafter:\n{}",
                entries().join("\n"),
                self.log.join("\n")
            );
        }
    }

    /// What a person does on the daemon's page (none runs: nothing): POST
    /// a form with the page's own origin, as the browser does.
    pub(super) fn page(&mut self, pick: u8, what: u8) -> anyhow::Result<()> {
        let Some(info) = memd::server::running(&self.layout) else {
            return Ok(());
        };
        let base = format!("http://{}", info.listen);
        let (path, form) = match what {
            0 | 1 => {
                let Some(id) = self.proposal(pick) else {
                    return Ok(());
                };
                let action = if what == 0 { "accept" } else { "reject" };
                self.page_post(&base, "/review", &format!("action={action}&item={id}"))?;
                ("/review".to_string(), "action=apply".to_string())
            }
            _ => {
                let Some((id, text, sources)) = self.entry(pick) else {
                    return Ok(());
                };
                let path = format!("/entries/{id}/forget");
                self.page_post(&base, &path, "")?;
                self.ledger.forgot_entry(&id, &text, &sources);
                return Ok(());
            }
        };
        self.page_post(&base, &path, &form)
    }

    fn page_post(&self, base: &str, path: &str, form: &str) -> anyhow::Result<()> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        let req = client
            .post(format!("{base}{path}"))
            .header("origin", base)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form.to_string());
        let status = self
            .rt
            .block_on(async { req.send().await.map(|r| r.status().as_u16()) })?;
        anyhow::ensure!(status == 303, "the page answered {status} to POST {path}");
        Ok(())
    }

    /// REVIEW.md as a person edits it: an item marked `[x]`, deleted, its
    /// line broken; or nonsense added.
    pub(super) fn hand_review(&mut self, pick: u8, how: u8) -> anyhow::Result<()> {
        let path = self.layout.review_md();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let sheet = memd::review::sheet::Sheet::parse(&text);
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        let item = sheet.items.get(pick as usize % sheet.items.len().max(1));
        match (how, item) {
            (0, Some(i)) => lines[i.line] = lines[i.line].replacen("- [ ]", "- [x]", 1),
            (1, Some(i)) => {
                lines.drain(i.line..i.end);
            }
            (2, Some(i)) => lines[i.line] = lines[i.line].replacen("- [", "- [?", 1),
            _ => lines.extend([
                "- [x] yes to all of it".into(),
                "* [".into(),
                "no idea".into(),
            ]),
        }
        std::fs::write(&path, lines.join("\n") + "\n")?;
        Ok(())
    }
}

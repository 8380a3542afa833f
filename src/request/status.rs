//! [`Status`]: the state of the memory directory and the configuration in
//! force.

use serde::{Deserialize, Serialize};

use super::route::{Method, Route};
use super::target::{Request, Target, blocking};
use crate::error::Result;
use crate::status::{self, Report};

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Status {}

impl Request for Status {
    type Reply = Report;

    const ROUTE: Route = Route {
        method: Method::Get,
        path: "/status",
        summary: "The state of the memory directory and the configuration in force",
    };

    fn needs_index(&self) -> bool {
        false
    }

    async fn apply(self, target: &Target) -> Result<Report> {
        let memory = target.memory.clone();
        let index = target.index_if_open();
        blocking(move || status::gather(&memory, index.as_deref())).await
    }
}

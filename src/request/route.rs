//! Where a request is in the HTTP API: its method and path.

/// An HTTP method a route answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Delete,
    Patch,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Delete => "DELETE",
            Method::Patch => "PATCH",
        }
    }

    /// Whether the parameters past the path travel in the query string (or
    /// else in a JSON body).
    pub fn in_query(self) -> bool {
        !matches!(self, Method::Post | Method::Patch)
    }
}

/// How the HTTP API reaches a request: its method and its path under the
/// memory's base (`/v1` for `memd serve`, `/v1/m/{name}` for `serve
/// --root`). A `{field}` in the path is that field of the request; the
/// other fields are the query (GET, DELETE) or the JSON body (POST,
/// PATCH).
#[derive(Debug, Clone, Copy)]
pub struct Route {
    pub method: Method,
    pub path: &'static str,
    /// One line for the API's description.
    pub summary: &'static str,
}

impl Route {
    /// The names of the path's `{field}`s.
    pub fn path_fields(&self) -> impl Iterator<Item = &'static str> {
        self.path
            .split('/')
            .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
    }
}

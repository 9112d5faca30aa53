//! `GET /_calltape/cassette/NAME`: what the run did so far with one cassette of the cassette folder,
//! so a test runner's plugin can fail the test that missed even when the application swallowed the
//! 404 (the pytest and Vitest integrations ask after each test).
//!
//! The answer is JSON: `{"version":1,"mode":…,"cassette":{"path":…,"missing":false,"hits":N,
//! "misses":[…],"fuzzy":[…],"drift":[…]},"failures":N,"text":…}`, the cassette's entry of the run's
//! [`Report`] and the failure text its report prints. A cassette the run has not used yet answers
//! with zero hits and no failures. The request passes the same front door as any other (origin,
//! host, per-run path prefix) and never reaches an upstream.

use http::{HeaderValue, Method, StatusCode};
use serde_json::json;

use super::State;
use super::access::refuse;
use super::cassette_choice::cassette_path;
use super::report::{CassetteReport, Report};
use super::response::{HttpResponse, full};
use crate::cassette_name_in_path;

/// The path prefix of the query; the rest of the path is the cassette's name.
pub(crate) const PREFIX: &str = "/_calltape/cassette/";

/// The answer to a query for cassette `name`.
pub(crate) fn answer(state: &State, method: &Method, name: &str) -> HttpResponse {
    if method != Method::GET {
        return refuse(
            StatusCode::METHOD_NOT_ALLOWED,
            "the cassette query only answers GET",
        );
    }
    let path = match cassette_path(state, Some(&cassette_name_in_path(name))) {
        Ok(p) => p,
        Err(m) => return refuse(StatusCode::BAD_REQUEST, &m),
    };
    let entry = {
        let report = state.report();
        report
            .cassettes
            .iter()
            .find(|c| c.path == path)
            .cloned()
            .unwrap_or(CassetteReport {
                path,
                ..CassetteReport::default()
            })
    };
    let one = Report {
        mode: Some(state.mode),
        cassettes: vec![entry],
        ..Report::default()
    };
    let body = json!({
        "version": 1,
        "mode": state.mode.as_str(),
        "cassette": one.to_json()["cassettes"][0].clone(),
        "failures": one.failures(),
        "text": one.failure_text(),
    });
    let mut resp = hyper::Response::new(full(body.to_string()));
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

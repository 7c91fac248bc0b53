//! An MCP server on stdio built with rmcp 2.2, the Rust SDK as it was
//! before the 2026-07-28 revision: it takes only the `initialize` handshake
//! and exits when its first request is anything else (`server/discover`
//! included). Two tools: `echo` answers with its `text`, `remove` says it
//! removed its `path` (a tool for a guard to deny).

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, ErrorData, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerInfo, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

struct Tools;

fn tool(name: &'static str, description: &'static str, field: &'static str) -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {field: {"type": "string"}},
        "required": [field],
    });
    let Value::Object(schema) = schema else {
        unreachable!("a JSON object literal")
    };
    Tool::new(name, description, Arc::new(schema))
}

impl ServerHandler for Tools {
    fn get_info(&self) -> ServerInfo {
        let mut info = ServerInfo::default();
        info.capabilities = ServerCapabilities::builder().enable_tools().build();
        info.server_info = Implementation::new("hookbox-rmcp-server", "2.2.0");
        info.instructions = Some("A test server from before MCP 2026-07-28.".into());
        info
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![
            tool("echo", "Answers with its text.", "text"),
            tool("remove", "Removes a file (says so).", "path"),
        ]))
    }

    async fn call_tool(
        &self,
        call: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let arg = |field: &str| {
            call.arguments
                .as_ref()
                .and_then(|a| a.get(field))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| ErrorData::invalid_params(format!("`{field}` is needed"), None))
        };
        let text = match call.name.as_ref() {
            "echo" => format!("echo: {}", arg("text")?),
            "remove" => format!("removed {}", arg("path")?),
            other => {
                return Err(ErrorData::invalid_params(format!("no tool {other}"), None));
            }
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    match Tools.serve(rmcp::transport::stdio()).await {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        Err(e) => {
            eprintln!("hookbox-rmcp-server: {e}");
            std::process::exit(1);
        }
    }
}

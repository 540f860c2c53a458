// Calls a running e2a-grpc server: ToACP, then a Chat stream.
// Run: cargo run --example chat -- http://127.0.0.1:50051
use e2a_grpc::json::{envelope_from_json, response_to_json};
use e2a_grpc::v1::agent_service_client::AgentServiceClient;
use e2a_grpc::v1::conversion_service_client::ConversionServiceClient;
use e2a_grpc::v1::{to_acp_request, to_acp_response, ChatRequest, E2aResponse, ToAcpRequest};

/// Converts a request to ACP JSON-RPC, then streams the agent's answer to it.
pub async fn run(
    address: String,
) -> Result<(String, Vec<E2aResponse>), Box<dyn std::error::Error>> {
    let envelope = envelope_from_json(
        r#"{"request_id":"r-1","session_id":"s-1","jsonrpc_id":7,"method":"session/prompt",
            "params":{"prompt":[{"type":"text","text":"hello from Rust"}]}}"#,
    )?;

    let mut conversion = ConversionServiceClient::connect(address.clone()).await?;
    let request = ToAcpRequest {
        source: Some(to_acp_request::Source::Envelope(envelope.clone())),
        ..Default::default()
    };
    let jsonrpc = match conversion.to_acp(request).await?.into_inner().result {
        Some(to_acp_response::Result::Jsonrpc(text)) => text,
        other => return Err(format!("no ACP JSON-RPC: {other:?}").into()),
    };

    let mut agent = AgentServiceClient::connect(address).await?;
    let request = ChatRequest {
        envelope: Some(envelope),
    };
    let mut stream = agent.chat(request).await?.into_inner();
    let mut frames = Vec::new();
    while let Some(frame) = stream.message().await? {
        frames.push(frame.response.ok_or("a frame without a response")?);
    }
    Ok((jsonrpc, frames))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or("http://127.0.0.1:50051".into());
    let (jsonrpc, frames) = run(address).await?;
    println!("{jsonrpc}");
    for frame in &frames {
        println!("{}", response_to_json(frame)?);
    }
    Ok(())
}

//! Generates the prost messages and tonic client stubs of `proto/e2a/v1` with the protoc that
//! the `protoc-bin-vendored` crate ships, so the build needs nothing installed.

use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new("../../proto");
    let files = [
        "e2a/v1/e2a.proto",
        "e2a/v1/conversion_service.proto",
        "e2a/v1/agent_service.proto",
        "e2a/v1/codec_service.proto",
        "e2a/v1/options.proto",
    ];
    // Build scripts run single-threaded; the code generator below reads PROTOC.
    std::env::set_var("PROTOC", protoc_bin_vendored::protoc_bin_path()?);
    for file in &files {
        println!("cargo:rerun-if-changed={}", root.join(file).display());
    }
    // e2a.v1 refers to the CloudEvents protobuf format (package io.cloudevents.v1, in
    // e2a/cloudevents/v1): generated on its own below, into the module `cloudevents::v1`.
    let cloudevents = "e2a/cloudevents/v1/cloudevents.proto";
    println!(
        "cargo:rerun-if-changed={}",
        root.join(cloudevents).display()
    );
    tonic_prost_build::configure()
        .build_server(false)
        .extern_path(".io.cloudevents.v1", "crate::cloudevents::v1")
        .compile_protos(&files.map(|f| root.join(f)), &[root.to_path_buf()])?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(false)
        .compile_protos(&[root.join(cloudevents)], &[root.to_path_buf()])?;
    Ok(())
}

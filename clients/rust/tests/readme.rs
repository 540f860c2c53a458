//! The README's client example is `examples/chat.rs` (which `tests/live.rs` runs), and the
//! repository README's section, once there, is this crate's README.

mod common;

/// The text of the fenced block that starts with `fence` in `markdown`.
fn block<'a>(markdown: &'a str, fence: &str) -> &'a str {
    let start = markdown.find(fence).expect("the block") + fence.len() + 1;
    let end = start + markdown[start..].find("\n```").expect("the block's end") + 1;
    &markdown[start..end]
}

#[test]
fn readme_client_block_is_the_example_file() {
    let root = common::crate_dir();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let example = std::fs::read_to_string(root.join("examples/chat.rs")).unwrap();
    assert_eq!(block(&readme, "```rust,no_run"), example);
}

#[test]
fn repository_readme_section_is_the_crate_readme() {
    let crate_readme = std::fs::read_to_string(common::crate_dir().join("README.md")).unwrap();
    let repo_readme = std::fs::read_to_string(common::repo_root().join("README.md")).unwrap();
    let start = repo_readme
        .find("## Using the schema from Rust")
        .expect("README.md has a section \"Using the schema from Rust\"");
    let section = &repo_readme[start..];
    assert!(
        section.starts_with(crate_readme.trim_end()),
        "README.md's section \"Using the schema from Rust\" differs from clients/rust/README.md"
    );
}

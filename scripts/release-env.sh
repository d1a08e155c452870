# Sourced (bash) by scripts/dist.sh and by the CI steps that use its release build; needs $root, the checkout.
#
# The release artefacts are linked for glibc 2.17 (scripts/dist.sh, with cargo-zigbuild and Zig): cargo builds them
# for the explicit target x86_64-unknown-linux-gnu, so into $release_target_dir/x86_64-unknown-linux-gnu/release,
# with `zig cc` for glibc 2.17 as the C compiler and the linker. scripts/dist.sh records the environment that
# cargo-zigbuild gave cargo in $release_env. Then:
#
#   release_run CMD...      runs CMD with that environment and CARGO_BUILD_TARGET, so that a `cargo build --release`
#                           in it (also one inside make, maturin...) is the same build and finds it fresh, where a
#                           plain `cargo build --release` would build everything again, natively, into release/;
#   release_link            hard-links the files that build made (libcosid.so and .a, the Node addon, the CLI) into
#                           $release_target_dir/release, where the scripts that only read them look (install-c.sh,
#                           the Java and Go bindings, cosid serve, the docs, interop, check-version);
#   $release_dir            where that build's files are.
#
# Without a recorded environment (scripts/dist.sh never ran in this target folder), release_run runs CMD as it is and
# $release_dir is release/: a developer's native build.
release_target_dir=${CARGO_TARGET_DIR:-$root/target}
case "$release_target_dir" in /*) ;; *) release_target_dir=$root/$release_target_dir ;; esac
release_triple=x86_64-unknown-linux-gnu
release_glibc=2.17
release_env=$release_target_dir/$release_triple/zigbuild.env
release_zig_dir=$release_target_dir/$release_triple/release
if [ -f "$release_env" ]; then
    release_dir=$release_zig_dir
else
    release_dir=$release_target_dir/release
fi

release_run() {
    if [ -f "$release_env" ]; then
        (
            set -a
            # shellcheck disable=SC1090 # written by scripts/dist.sh
            . "$release_env"
            set +a
            export CARGO_BUILD_TARGET=$release_triple
            exec "$@"
        )
    else
        "$@"
    fi
}

release_link() {
    [ -f "$release_env" ] || return 0
    local f
    mkdir -p "$release_target_dir/release"
    for f in libcosid.so libcosid.a libcosid_node.so cosid; do
        if [ -f "$release_zig_dir/$f" ]; then
            ln -f "$release_zig_dir/$f" "$release_target_dir/release/$f" 2>/dev/null ||
                cp -f "$release_zig_dir/$f" "$release_target_dir/release/$f"
        fi
    done
}

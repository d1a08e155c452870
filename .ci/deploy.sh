#!/usr/bin/env bash
# Checks deploy/ (docs/operations.md) with what runs on this machine, without a cluster, a registry or a daemon:
#
#     bash .ci/deploy.sh
#
#   systemd     `systemd-analyze verify` on deploy/systemd/cosid-serve.service (a copy whose ExecStart is the built
#               CLI, so the binary check is real); any warning fails. `systemd-analyze security` prints the score,
#               which must stay at 2.0 or below.
#   kubernetes  deploy/check (Go, built from the Go module proxy): every manifest decoded strictly into the typed
#               objects of k8s.io/api and of the Prometheus Operator, and the invariants checked (probes on /readyz
#               and /healthz, non-root, read-only root filesystem, no capabilities, the store from a Secret, the
#               selectors, the Secrets' keys); every file of kustomization.yaml present. `kubectl kustomize` renders
#               them when kubectl is installed.
#   container   deploy/Containerfile parsed and linted by BuildKit's Dockerfile frontend (deploy/check), and checked
#               for its invariants (multi-stage, numeric non-root USER, no `latest`, port, entrypoint); hadolint when
#               installed; `docker build` when a Docker daemon answers and has the base images (no registry here).
#   smoke       the built CLI run as the image and the unit run it: as UID 65532 with no capabilities, no HOME, a
#               read-only working folder and (where mount namespaces are allowed) a read-only file system but the
#               state folder, with the Deployment's flags and an SQLite store in the state folder; /healthz and
#               /readyz answer 200, /metrics 401 without the token and 200 with it, /ids issues ids; SIGTERM, exit 0.
#
# Needs Go (on the machine) and systemd-analyze (Debian's `systemd`, installed when missing and run as root). Go
# modules and builds are cached in ${CARGO_TARGET_DIR:-target}/deploy-tools. The smoke run uses COSID_BIN, else
# target/release/cosid, else target/debug/cosid, and is skipped (with the reason) when none is built.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}
case "$target" in /*) ;; *) target=$root/$target ;; esac
tools=$target/deploy-tools
mkdir -p "$tools"

log() { echo "deploy.sh: $*" >&2; }
fail() {
    log "FAILED: $*"
    exit 1
}

# Each check prints its duration when the next one starts, and a table at the end.
current=""
current_start=$SECONDS
timings=()
finish_check() {
    if [ -n "$current" ]; then
        local took=$((SECONDS - current_start))
        timings+=("$(printf '%4d s  %s' "$took" "$current")")
        printf '==== deploy: %s: done in %d s\n' "$current" "$took"
    fi
}
check() {
    finish_check
    current="$*"
    current_start=$SECONDS
    printf '\n==== deploy: %s\n' "$*"
}
work=$(mktemp -d "${TMPDIR:-/tmp}/cosid-deploy.XXXXXX")
serve_pid=""
summary() {
    local status=$?
    [ -z "$serve_pid" ] || { kill "$serve_pid" 2>/dev/null; wait "$serve_pid" 2>/dev/null; } || true
    rm -rf "$work"
    finish_check
    printf '\n==== deploy: check durations\n'
    [ "${#timings[@]}" -eq 0 ] || printf '%s\n' "${timings[@]}"
    printf '%4d s  total (exit %d)\n' "$SECONDS" "$status"
}
trap summary EXIT

apt_install() {
    [ "$(id -u)" = 0 ] || return 1
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends "$@" >&2 ||
        { apt-get update -q >&2 && apt-get install -y -q --no-install-recommends "$@" >&2; }
}

# The CLI of the smoke run and of the unit's verification, if one is built.
bin=""
for candidate in "${COSID_BIN:-}" "$target/release/cosid" "$root/target/release/cosid" "$target/debug/cosid" \
    "$root/target/debug/cosid"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then
        bin=$candidate
        break
    fi
done

# ---------------------------------------------------------------------------------------------------------------
check "systemd: systemd-analyze verify and security on deploy/systemd/cosid-serve.service"
if ! command -v systemd-analyze >/dev/null 2>&1; then
    log "installing systemd (for systemd-analyze)"
    apt_install systemd || fail "systemd-analyze is missing and cannot be installed (not root)"
fi
unit=deploy/systemd/cosid-serve.service
grep -qx 'ExecStart=/usr/local/bin/cosid serve $COSID_SERVE_ARGS' "$unit" ||
    fail "$unit: ExecStart is not '/usr/local/bin/cosid serve \$COSID_SERVE_ARGS' (the path the docs install to)"
# verify checks that ExecStart's binary exists and is executable: point a copy at the built CLI (or, with none
# built, at a stub that says so), under the unit's own name.
mkdir -p "$work/unit"
if [ -n "$bin" ]; then
    exec_path=$bin
else
    exec_path=$work/cosid-stub
    printf '#!/bin/sh\necho "no cosid built" >&2\nexit 1\n' >"$exec_path"
    chmod 755 "$exec_path"
    log "no cosid built: the unit is verified with a stub in its place"
fi
sed "s#^ExecStart=/usr/local/bin/cosid #ExecStart=$exec_path #" "$unit" >"$work/unit/cosid-serve.service"
grep -q "^ExecStart=$exec_path " "$work/unit/cosid-serve.service" || fail "could not rewrite ExecStart"
# verify exits 0 on unknown keys and bad values (it only warns): any line it prints is a failure.
verify_out=$(SYSTEMD_LOG_COLOR=0 systemd-analyze verify "$work/unit/cosid-serve.service" 2>&1) ||
    fail "systemd-analyze verify: $verify_out"
[ -z "$verify_out" ] || fail "systemd-analyze verify warned:
$verify_out"
echo "systemd-analyze verify: no warnings ($(systemd-analyze --version | head -1))"
security=$(systemd-analyze security --offline=yes --no-pager "$work/unit/cosid-serve.service" 2>&1) ||
    fail "systemd-analyze security: $security"
echo "$security" | grep -v '^✓' || true
score=$(echo "$security" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
[ -n "$score" ] || fail "no exposure level in systemd-analyze security's output"
awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' ||
    fail "exposure level $score, above 2.0: the sandbox of $unit was loosened"
echo "systemd-analyze security: exposure level $score (0 is the tightest, 10 none)"

# ---------------------------------------------------------------------------------------------------------------
check "kubernetes and containerfile: deploy/check (typed, strict decoding; BuildKit's parser and linter)"
command -v go >/dev/null 2>&1 || fail "go is not installed (deploy/check is a Go program)"
export GOMODCACHE=$tools/go/mod GOCACHE=$tools/go/cache GOFLAGS=-mod=readonly
# The modules come from the Go module proxy the first time (about a minute), then from the cache.
go -C deploy/check build -o "$tools/deploy-check" . || fail "deploy/check does not build"
"$tools/deploy-check" -kubernetes deploy/kubernetes -containerfile deploy/Containerfile ||
    fail "deploy/check found problems (above)"
if command -v kubectl >/dev/null 2>&1; then
    kubectl kustomize deploy/kubernetes >"$work/rendered.yaml" || fail "kubectl kustomize deploy/kubernetes"
    echo "kubectl kustomize: $(grep -c '^kind:' "$work/rendered.yaml") objects rendered"
else
    echo "kubectl kustomize: skipped, kubectl is not installed (deploy/check read kustomization.yaml itself)"
fi
# The tarball stage takes what scripts/dist.sh makes: dist/cosid-cli-VERSION-x86_64-linux-gnu.tar.gz, bin/cosid.
grep -q '^triple=x86_64-linux-gnu$' scripts/dist.sh && grep -q 'cli_name=cosid-cli-$version-$triple' scripts/dist.sh &&
    grep -q '"$stage/$cli_name/bin/cosid"' scripts/dist.sh ||
    fail "scripts/dist.sh no longer makes dist/cosid-cli-VERSION-x86_64-linux-gnu.tar.gz with bin/cosid, which deploy/Containerfile copies"
[ "$(readlink deploy/Dockerfile)" = Containerfile ] || fail "deploy/Dockerfile is not a link to Containerfile"
if command -v hadolint >/dev/null 2>&1; then
    hadolint deploy/Containerfile || fail "hadolint deploy/Containerfile"
    echo "hadolint: clean"
else
    echo "hadolint: skipped, not installed (no Debian package; BuildKit's own linter ran above)"
fi

# ---------------------------------------------------------------------------------------------------------------
check "container: docker build"
if ! command -v docker >/dev/null 2>&1; then
    echo "docker build: skipped, no docker command"
elif ! docker info >/dev/null 2>&1; then
    echo "docker build: skipped, no Docker daemon answers (deploy/check parsed and linted the file instead)"
else
    images=$(sed -n 's/^FROM \([^ ]*[:@][^ ]*\) AS .*/\1/p' deploy/Containerfile | sort -u)
    missing=""
    for image in $images; do
        docker image inspect "$image" >/dev/null 2>&1 || missing="$missing $image"
    done
    if [ -n "$missing" ]; then
        echo "docker build: skipped, base images not present and no registry to pull them from:$missing"
    else
        from=source
        ls dist/cosid-cli-*-x86_64-linux-gnu.tar.gz >/dev/null 2>&1 && from=tarball
        docker build -f deploy/Containerfile --build-arg COSID_FROM=$from -t cosid-deploy-check:ci . ||
            fail "docker build -f deploy/Containerfile --build-arg COSID_FROM=$from"
        user=$(docker image inspect -f '{{.Config.User}}' cosid-deploy-check:ci)
        [ "$user" = 65532:65532 ] || fail "the image's user is '$user', expected 65532:65532"
        echo "docker build: built from $from, user $user"
    fi
fi

# ---------------------------------------------------------------------------------------------------------------
check "smoke: cosid serve as the image and the unit run it (non-root, read-only, the Deployment's flags, SIGTERM)"
if [ -z "$bin" ]; then
    echo "smoke: skipped, no cosid built (COSID_BIN, $target/release/cosid or target/debug/cosid)"
    exit 0
fi
echo "smoke: $bin"
# Every flag that the Deployment and the example env file give must be one `cosid serve` takes.
help=$("$bin" serve --help)
for flag in $(sed -n 's/^ *- \(--[a-z-]*\)=.*/\1/p' deploy/kubernetes/deployment.yaml) \
    $(grep -o -- '--[a-z][a-z-]*' deploy/systemd/serve.env | sort -u); do
    grep -q -- "^ *$flag " <<<"$help" || fail "$flag (deploy/) is not a flag of cosid serve"
done
# The image's layout: the binary root-owned and read-only, a state folder of its own for UID 65532, a token file.
uid=65532
mkdir -p "$work/bin" "$work/state" "$work/cwd" "$work/etc"
install -m 0755 "$bin" "$work/bin/cosid"
token=deploy-smoke-$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
printf '# every namespace\n%s\n' "$token" >"$work/etc/tokens"
chmod 0444 "$work/etc/tokens"
chmod 0555 "$work/cwd"
chmod 0755 "$work" "$work/bin" "$work/etc"
# The Deployment's flags, with the token file here; listening on loopback, any free port.
args=()
while IFS= read -r a; do
    case "$a" in --token-file=*) a=--token-file=$work/etc/tokens ;; esac
    args+=("$a")
done < <(sed -n 's/^ *- \(--[a-z-]*=.*\)$/\1/p' deploy/kubernetes/deployment.yaml)
run=(env -i PATH=/usr/bin:/bin COSID_SERVE_LISTEN=127.0.0.1:0 "COSID_STORE=sqlite://$work/state/leases.db"
    "$work/bin/cosid" serve "${args[@]}")
ro_note="no read-only file system (not root: the folders' modes only)"
if [ "$(id -u)" = 0 ]; then
    chown "$uid:$uid" "$work/state"
    chmod 0700 "$work/state"
    # No capabilities at all, no way to gain any, and not root: as the Deployment's securityContext.
    run=(setpriv --reuid=$uid --regid=$uid --clear-groups --no-new-privs --inh-caps=-all --bounding-set=-all
        "${run[@]}")
    # readOnlyRootFilesystem: in a mount namespace of its own, every mount read-only but the state folder (and
    # /proc, /sys, /dev, as in a container).
    # shellcheck disable=SC2016
    readonly_root=(unshare --mount --propagation private sh -c '
        state=$1; shift
        mount --bind "$state" "$state" || exit 97
        findmnt -rn -o TARGET | sed "s/\\\\x20/ /g" | while IFS= read -r m; do
            case "$m" in /proc|/proc/*|/sys|/sys/*|/dev|/dev/*|"$state") continue ;; esac
            mount -o remount,bind,ro "$m" 2>/dev/null || true
        done
        if touch /.cosid-deploy-rw-probe 2>/dev/null; then rm -f /.cosid-deploy-rw-probe; exit 97; fi
        cd "$1" && shift
        exec "$@"' sh "$work/state" "$work/cwd")
    # Where mount namespaces or read-only remounts are not allowed, the folders' modes alone keep it in.
    if "${readonly_root[@]}" true 2>/dev/null; then
        run=("${readonly_root[@]}" "${run[@]}")
        ro_note="every mount read-only but $work/state (a mount namespace)"
    else
        run=(sh -c 'cd "$1" && shift && exec "$@"' sh "$work/cwd" "${run[@]}")
        ro_note="no read-only file system (no mount namespace here): UID $uid can write only its state folder and world-writable folders"
    fi
else
    run=(sh -c 'cd "$1" && shift && exec "$@"' sh "$work/cwd" "${run[@]}")
fi
echo "smoke: UID $(if [ "$(id -u)" = 0 ]; then echo $uid; else id -u; fi), no HOME, read-only working folder; $ro_note"
"${run[@]}" >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
url=""
for _ in $(seq 1 200); do
    url=$(sed -n 's/^cosid serve: listening on \(http:\/\/[^ ]*\).*/\1/p' "$work/serve.out" | head -1)
    [ -n "$url" ] && break
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$url" ]; then
    cat "$work/serve.out" "$work/serve.err" >&2
    fail "cosid serve did not start"
fi
echo "smoke: listening at $url"
status() { curl -s -o "$work/body" -w '%{http_code}' --max-time 10 "$@"; }
expect() {
    local want=$1 what=$2 got
    shift 2
    got=$(status "$@")
    [ "$got" = "$want" ] || { cat "$work/serve.err" >&2; fail "$what: HTTP $got, expected $want: $(head -c 300 "$work/body")"; }
    echo "smoke: $what: $got"
}
expect 200 "GET /healthz (liveness, no token)" "$url/healthz"
expect 200 "GET /readyz (readiness, no token)" "$url/readyz"
expect 401 "GET /metrics without a token" "$url/metrics"
expect 200 "GET /metrics with the token (as the ServiceMonitor scrapes it)" -H "Authorization: Bearer $token" "$url/metrics"
grep -q '^cosid_serve_' "$work/body" || fail "/metrics has no cosid_serve_ metric"
# A runtime of the server's own: it writes its lease into the SQLite file in the state folder.
expect 200 "GET /v1/namespaces/smoke/ids?n=3 (a lease in the state folder's SQLite file)" \
    -H "Authorization: Bearer $token" "$url/v1/namespaces/smoke/ids?n=3"
[ -s "$work/state/leases.db" ] || fail "no leases.db in the state folder"
# SIGTERM, as Kubernetes and systemd stop it: the requests in flight finish, its slot is released, exit 0.
kill -TERM "$serve_pid"
code=0
for _ in $(seq 1 300); do
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$serve_pid" 2>/dev/null; then
    kill -KILL "$serve_pid"
    fail "cosid serve still running 30 s after SIGTERM"
fi
wait "$serve_pid" || code=$?
serve_pid=""
[ "$code" = 0 ] || { cat "$work/serve.err" >&2; fail "cosid serve exited $code after SIGTERM, expected 0"; }
echo "smoke: SIGTERM: exit 0"
# Nothing written outside the state folder.
written=$(find "$work" -path "$work/state" -prune -o -newer "$work/etc/tokens" -type f -print |
    grep -v -e "^$work/serve\.\(out\|err\)$" -e "^$work/body$" || true)
[ -z "$written" ] || fail "cosid serve wrote outside its state folder: $written"
echo "smoke: its log (stderr, --log-format=json), first lines:"
head -3 "$work/serve.err"

package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

var numericUser = regexp.MustCompile(`^([0-9]+)(:([0-9]+))?$`)

func checkContainerfile(path string, p *problems) int {
	f, err := os.Open(path)
	if err != nil {
		p.add(path, "%v", err)
		return 0
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		p.add(path, "does not parse: %v", err)
		return 0
	}
	for _, w := range res.Warnings {
		p.add(path, "parser: %s", w.Short)
	}
	// BuildKit's lint rules, as `docker build --check` runs those of parsing (experimental ones too).
	lint := linter.New(&linter.Config{
		ExperimentalAll: true,
		Warn: func(rule, description, url, msg string, loc []parser.Range) {
			line := 0
			if len(loc) > 0 {
				line = loc[0].Start.Line
			}
			p.add(path, "line %d: lint %s: %s", line, rule, msg)
		},
	})
	stages, metaArgs, err := instructions.Parse(res.AST, lint)
	if err != nil {
		p.add(path, "%v", err)
		return 0
	}

	// The ARGs before the first FROM, with their defaults, expand the FROM lines.
	var env []string
	for _, a := range metaArgs {
		for _, kv := range a.Args {
			env = append(env, kv.Key+"="+kv.ValueString())
		}
	}
	lex := shell.NewLex(res.EscapeToken)
	names := map[string]bool{}
	for _, s := range stages {
		base, _, err := lex.ProcessWord(s.BaseName, shell.EnvsFromSlice(env))
		if err != nil {
			p.add(path, "FROM %s: %v", s.BaseName, err)
		}
		switch {
		case names[strings.ToLower(base)]:
			// an earlier stage
		case strings.Contains(s.BaseName, "$"):
			p.add(path, "FROM %s: %q with the default build arguments, not an earlier stage", s.BaseName, base)
		default:
			checkBaseImage(path, base, p)
		}
		if s.Name != "" {
			names[strings.ToLower(s.Name)] = true
		}
	}
	if len(stages) < 2 {
		p.add(path, "%d stage: build and runtime must be separate stages", len(stages))
		return len(stages)
	}
	// Both ways to the binary: compiled, or from the release tarball.
	for _, want := range []string{"bin-source", "bin-tarball"} {
		if !names[want] {
			p.add(path, "no stage %q", want)
		}
	}
	var builds, protoc bool
	for _, s := range stages {
		for _, c := range s.Commands {
			if r, ok := c.(*instructions.RunCommand); ok {
				line := strings.Join(r.CmdLine, " ")
				builds = builds || strings.Contains(line, "cargo build --release --locked -p cosid-cli --features stores")
				protoc = protoc || strings.Contains(line, "protobuf-compiler")
			}
		}
	}
	if !builds {
		p.add(path, "no stage runs `cargo build --release --locked -p cosid-cli --features stores`")
	}
	if !protoc {
		p.add(path, "no stage installs protobuf-compiler (etcd's client needs protoc)")
	}
	checkRuntimeStage(path, stages[len(stages)-1], p)
	return len(stages)
}

// checkBaseImage refuses an image with no tag, or the `latest` tag: a rebuild must get the same base.
func checkBaseImage(path, image string, p *problems) {
	if image == "scratch" {
		return
	}
	if strings.Contains(image, "@sha256:") {
		return
	}
	name := image[strings.LastIndex(image, "/")+1:]
	tag, ok := "", false
	if i := strings.LastIndex(name, ":"); i >= 0 {
		tag, ok = name[i+1:], true
	}
	if !ok || tag == "" || tag == "latest" {
		p.add(path, "FROM %s: name a version tag (or a digest), not `latest` or none", image)
	}
}

func checkRuntimeStage(path string, s instructions.Stage, p *problems) {
	where := fmt.Sprintf("stage %q", s.Name)
	var user string
	var exposed, volume, binary, listen, healthcheck bool
	var entrypoint *instructions.EntrypointCommand
	for _, c := range s.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.ExposeCommand:
			exposed = exposed || slices.Contains(c.Ports, "7468") || slices.Contains(c.Ports, "7468/tcp")
		case *instructions.VolumeCommand:
			volume = volume || slices.Contains(c.Volumes, "/var/lib/cosid")
		case *instructions.CopyCommand:
			binary = binary || (c.From != "" && c.DestPath == "/usr/local/bin/cosid")
		case *instructions.EnvCommand:
			for _, kv := range c.Env {
				listen = listen || (kv.Key == "COSID_SERVE_LISTEN" && kv.Value == "0.0.0.0:7468")
			}
		case *instructions.EntrypointCommand:
			entrypoint = c
		case *instructions.HealthCheckCommand:
			healthcheck = true
		case *instructions.RunCommand:
			p.add(path, "%s: RUN in the runtime stage (it has no shell, and adds a layer of changes)", where)
		}
	}
	if m := numericUser.FindStringSubmatch(user); m == nil || m[1] == "0" || m[3] == "0" {
		p.add(path, "%s: USER %q, expected a numeric non-root UID[:GID] (runAsNonRoot checks a number)", where, user)
	}
	if !exposed {
		p.add(path, "%s: no EXPOSE 7468", where)
	}
	if !volume {
		p.add(path, "%s: no VOLUME /var/lib/cosid (the only place it writes, under a read-only root)", where)
	}
	if !binary {
		p.add(path, "%s: /usr/local/bin/cosid is not copied from a build stage", where)
	}
	if !listen {
		p.add(path, "%s: no ENV COSID_SERVE_LISTEN=0.0.0.0:7468 (the default listens on loopback only)", where)
	}
	if entrypoint == nil || entrypoint.PrependShell || len(entrypoint.CmdLine) != 2 ||
		!strings.HasSuffix(entrypoint.CmdLine[0], "cosid") || entrypoint.CmdLine[1] != "serve" {
		p.add(path, "%s: ENTRYPOINT must be the exec form [\".../cosid\", \"serve\"] (cosid as PID 1 gets SIGTERM)", where)
	}
	if !healthcheck {
		fmt.Printf("containerfile: no HEALTHCHECK (the runtime image has no shell or HTTP client; probe /healthz and /readyz from outside)\n")
	}
}

// Command check validates cosid's deployment files where no cluster, registry or container daemon is at hand:
//
//	go run . -kubernetes ../kubernetes -containerfile ../Containerfile
//
// The Kubernetes manifests are decoded strictly (an unknown or duplicated field is an error) into the typed objects
// of k8s.io/api and of the Prometheus Operator, the same Go types the API server and the operator decode them into,
// and then checked for the invariants docs/operations.md relies on (probes, a non-root read-only container, the
// store from a Secret, selectors that match). The Containerfile is parsed by BuildKit's own Dockerfile frontend
// with its linter (the checks of `docker build --check`), then checked for its invariants (multi-stage, a numeric
// non-root user, no `latest` or untagged base image, the port, the entrypoint).
//
// Every problem is printed as FILE: WHAT; the exit status is 1 if there was any.
package main

import (
	"flag"
	"fmt"
	"os"
)

// problems collects what is wrong, so one run reports every problem at once.
type problems struct {
	list []string
}

func (p *problems) add(file, format string, args ...any) {
	p.list = append(p.list, fmt.Sprintf("%s: %s", file, fmt.Sprintf(format, args...)))
}

func main() {
	kube := flag.String("kubernetes", "", "folder with kustomization.yaml and the manifests it lists")
	containerfile := flag.String("containerfile", "", "the Containerfile (Dockerfile syntax)")
	flag.Parse()
	if *kube == "" && *containerfile == "" {
		fmt.Fprintln(os.Stderr, "usage: check [-kubernetes DIR] [-containerfile FILE]")
		os.Exit(2)
	}
	var p problems
	if *kube != "" {
		n := checkKubernetes(*kube, &p)
		fmt.Printf("kubernetes: %d objects decoded strictly and checked in %s\n", n, *kube)
	}
	if *containerfile != "" {
		n := checkContainerfile(*containerfile, &p)
		fmt.Printf("containerfile: %d stages parsed and linted by BuildKit's frontend in %s\n", n, *containerfile)
	}
	for _, line := range p.list {
		fmt.Fprintln(os.Stderr, "FAIL", line)
	}
	if len(p.list) > 0 {
		fmt.Fprintf(os.Stderr, "%d problems\n", len(p.list))
		os.Exit(1)
	}
	fmt.Println("check: no problems")
}

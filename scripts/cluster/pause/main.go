// The real node's pod sandbox process (the "pause" container, docs/real-node.md): it holds the
// pod's namespaces open until the sandbox is stopped, exits on SIGTERM or SIGINT, and reaps any
// child re-parented to it (PID 1 of a shared PID namespace). The upstream image cannot be pulled
// here, so scripts/images/build.sh packs this one under the name containerd is told to use.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	child := make(chan os.Signal, 1)
	signal.Notify(child, syscall.SIGCHLD)
	for {
		select {
		case <-stop:
			os.Exit(0)
		case <-child:
			for {
				pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
		}
	}
}

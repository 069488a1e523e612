// Command pause is the sandbox ("infra") container of a Kubernetes pod on the mockgpu kind node image:
// it holds the pod's namespaces open and does nothing else. As PID 1 of the pod's PID namespace (when
// the pod shares one) it reaps orphaned children, and it exits 0 on SIGINT or SIGTERM.
//
// Written for mockgpu (scripts/kind-node-image builds it into registry.k8s.io/pause:<tag>, the tag
// kubeadm and containerd's sandbox_image expect), because no registry can be pulled from here.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "-v" || os.Args[1] == "--version") {
		fmt.Println("pause (mockgpu)")
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "pause: warning: not running as PID 1")
	}
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		switch sig {
		case syscall.SIGCHLD:
			reap()
		default:
			fmt.Fprintf(os.Stderr, "pause: shutting down, got signal: %v\n", sig)
			os.Exit(0)
		}
	}
}

// reap collects every child that has exited, without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

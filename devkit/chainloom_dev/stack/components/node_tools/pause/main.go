// Command pause holds a pod's namespaces for the local node's container runtime.
//
// No image registry is reachable from the machines the stack runs on, so the pod sandbox
// image is built from this file: it sleeps, reaps any orphaned children (it is PID 1 when a
// pod shares its process namespace), and exits at once on SIGTERM or SIGINT.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for received := range signals {
		if received != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}

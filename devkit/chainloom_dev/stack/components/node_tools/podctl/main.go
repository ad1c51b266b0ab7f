// Command podctl removes every pod sandbox of a CRI runtime (usage: podctl SOCKET remove-all).
//
// Containers outlive containerd and the kubelet, so `chainloom-dev stack down` asks the runtime to
// stop and remove each pod sandbox first: that is what releases the pod's IP, deletes its
// veth and network namespace and unmounts its filesystems. crictl does the same, but it is
// not on the Go module proxy the stack builds from; the CRI client is part of Kubernetes.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	if len(os.Args) != 3 || os.Args[2] != "remove-all" {
		fmt.Fprintln(os.Stderr, "usage: podctl SOCKET remove-all")
		os.Exit(2)
	}
	conn, err := grpc.NewClient("unix://"+os.Args[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintln(os.Stderr, "podctl:", err)
		os.Exit(1)
	}
	defer conn.Close()
	client := runtimeapi.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pods, err := client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "podctl: listing pod sandboxes:", err)
		os.Exit(1)
	}
	failed := 0
	for _, pod := range pods.Items {
		if _, err := client.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: pod.Id}); err != nil {
			fmt.Fprintln(os.Stderr, "podctl: stopping", pod.Id, err)
			failed++
			continue
		}
		if _, err := client.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: pod.Id}); err != nil {
			fmt.Fprintln(os.Stderr, "podctl: removing", pod.Id, err)
			failed++
		}
	}
	fmt.Printf("removed %d pod sandboxes\n", len(pods.Items)-failed)
	if failed > 0 {
		os.Exit(1)
	}
}

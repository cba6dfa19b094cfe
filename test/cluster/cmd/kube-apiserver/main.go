// Command kube-apiserver is kube-apiserver 1.37.2, unchanged, built from the
// module proxy: the reference the cluster scenarios run against first.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}

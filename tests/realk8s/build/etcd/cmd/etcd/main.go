// Command etcd is the etcd server from go.etcd.io/etcd/server/v3, built
// by scripts/realk8s for the test control plane.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}

// Command printinfo prints buildinfo.Read as JSON: the test builds it with and
// without a linker stamp.
package main

import (
	"encoding/json"
	"os"

	"github.com/smcpgw/smcp-gateway/buildinfo"
)

func main() {
	if err := json.NewEncoder(os.Stdout).Encode(buildinfo.Read()); err != nil {
		os.Exit(1)
	}
}

package core_test

import (
	"testing"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/core/registrytest"
)

func TestMemRegistryConformance(t *testing.T) {
	registrytest.Run(t, func(*testing.T) core.Registry { return core.NewMemRegistry() })
}

package v1

import (
	"testing"

	"github.com/watchcache/watchcache/test/envtest/internal/assets"
)

// TestMain gives the suite watchcache as its KUBEBUILDER_ASSETS, unless
// the variable is set.
func TestMain(m *testing.M) { assets.Main(m) }

package ontestenv

import "github.com/watchcache/watchcache/test/envtest/internal/webhook/webhooktest"

var _ = webhooktest.Specs(&k8sClient)

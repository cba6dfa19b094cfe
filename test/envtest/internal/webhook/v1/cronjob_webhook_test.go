package v1

import (
	"testing"

	"github.com/watchcache/watchcache/test/envtest/internal/webhook/webhooktest"
)

var _ = webhooktest.Specs(&k8sClient)

// TestCheckSchedule: the validator's Cron syntax.
func TestCheckSchedule(t *testing.T) {
	for schedule, ok := range map[string]bool{
		"* * * * *": true, "*/5 * * * *": true, "0 3 * * 1-5": true, "0,30 8-18/2 1 1,6,12 0": true,
		"": false, "every minute": false, "* * * *": false, "* * * * * *": false, "61 * * * *": false,
		"* 24 * * *": false, "* * 0 * *": false, "* * * 13 *": false, "* * * * 7": false, "5-1 * * * *": false,
		"*/0 * * * *": false, "*/x * * * *": false, "a * * * *": false,
	} {
		if err := checkSchedule(schedule); (err == nil) != ok {
			t.Errorf("checkSchedule(%q) = %v, want ok %v", schedule, err, ok)
		}
	}
}

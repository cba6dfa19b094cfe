package app

import (
	"log/slog"
	"os"
	"strings"
	"testing"
)

// TestExposureWarnings: serving every interface logs a warning; louder
// ones when AlwaysAllow lets anyone change anything, and none of those on
// loopback.
func TestExposureWarnings(t *testing.T) {
	for _, tc := range []struct {
		bind  string
		modes []string
		want  []string
		never []string
	}{
		{bind: "127.0.0.1", modes: []string{ModeAlwaysAllow}, never: []string{"every network interface", "AlwaysAllow", "may list"}},
		{bind: "0.0.0.0", modes: []string{ModeRBAC}, want: []string{"every network interface"}, never: []string{"AlwaysAllow", "may list"}},
		{bind: "0.0.0.0", modes: []string{ModeAlwaysAllow}, want: []string{"every network interface", "--authorization-mode AlwaysAllow", "requests without credentials may list secrets"}},
	} {
		var logs lockedBuffer
		a, err := Start(Config{DataDir: t.TempDir(), EtcdUnsafeNoFsync: true, BindAddress: tc.bind, AuthorizationModes: tc.modes,
			AnonymousAuth: true, Log: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		a.Close()
		for _, w := range tc.want {
			if !strings.Contains(logs.String(), w) {
				t.Errorf("%s %v: no %q in the log:\n%s", tc.bind, tc.modes, w, logs.String())
			}
		}
		for _, w := range tc.never {
			if strings.Contains(logs.String(), w) {
				t.Errorf("%s %v: %q in the log:\n%s", tc.bind, tc.modes, w, logs.String())
			}
		}
	}
}

// TestStartRefusesBadSecurityConfig: a malformed token file, a bad signing
// key, an unknown authorization mode or admission plugin refuse the start
// with a message naming the culprit (kube-apiserver's, where it has one).
func TestStartRefusesBadSecurityConfig(t *testing.T) {
	dir := t.TempDir()
	tokens := dir + "/tokens.csv"
	key := dir + "/sa.key"
	writeTestFile(t, tokens, "good,alice,uid-1\nbad-line-two\n")
	writeTestFile(t, key, "not a key\n")
	for name, tc := range map[string]struct {
		cfg  Config
		want string
	}{
		"token file":  {Config{TokenAuthFile: tokens}, tokens + ":2:"},
		"signing key": {Config{ServiceAccountSigningKeyFile: key}, key},
		"mode":        {Config{AuthorizationModes: []string{"Node", "Bogus"}}, `authorization-mode "Bogus" is not a valid mode`},
		"webhook":     {Config{AuthorizationModes: []string{"Webhook"}}, `authorization-mode "Webhook" is not supported by watchcache`},
		"plugin":      {Config{EnableAdmissionPlugins: []string{"Bogus"}}, `enable-admission-plugins plugin "Bogus" is unknown`},
		"both": {Config{EnableAdmissionPlugins: []string{"NodeRestriction"}, DisableAdmissionPlugins: []string{"NodeRestriction", "ServiceAccount"}},
			`[NodeRestriction] in enable-admission-plugins and disable-admission-plugins overlapped`},
	} {
		cfg := tc.cfg
		cfg.DataDir, cfg.EtcdUnsafeNoFsync, cfg.Log = t.TempDir(), true, slog.New(slog.DiscardHandler)
		a, err := Start(cfg)
		if err == nil {
			a.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

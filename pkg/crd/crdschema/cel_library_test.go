package crdschema

import (
	"strings"
	"testing"
)

// evalCEL evaluates expr in the rules' environment with self bound to
// self, and returns its value or its compile or evaluation error.
func evalCEL(t *testing.T, expr string, self any) (any, error) {
	t.Helper()
	ast, iss := celEnv.Compile(expr)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	prg, err := celEnv.Program(ast, CELProgramOptions()...)
	if err != nil {
		return nil, err
	}
	out, _, err := prg.Eval(map[string]any{"self": self, "oldSelf": nil})
	if err != nil {
		return nil, err
	}
	return out.Value(), nil
}

// TestKubernetesLibraries checks the Kubernetes CEL libraries against the
// examples of kube-apiserver's documentation of them: each expression is
// true, or fails with the error given.
func TestKubernetesLibraries(t *testing.T) {
	for _, tc := range []struct{ expr, err string }{
		// URLs
		{expr: "isURL('https://user:pass@example.com:80/path?query=val#fragment')"},
		{expr: "isURL('/absolute-path')"},
		{expr: "!isURL('https://a:b:c/') && !isURL('../relative-path')"},
		{expr: "url('../relative-path') == url('/x')", err: `URL parse error during conversion from string: parse "../relative-path": invalid URI for request`},
		{expr: "url('/path').getScheme() == '' && url('https://example.com/').getScheme() == 'https'"},
		{expr: "url('https://example.com:80/').getHost() == 'example.com:80' && url('https://[::1]/').getHost() == '[::1]' && url('/path').getHost() == ''"},
		{expr: "url('https://[::1]:80/').getHostname() == '::1' && url('https://127.0.0.1:80/').getHostname() == '127.0.0.1'"},
		{expr: "url('https://example.com:80/').getPort() == '80' && url('https://example.com/').getPort() == ''"},
		{expr: "url('https://example.com/path with spaces/').getEscapedPath() == '/path%20with%20spaces/' && url('https://example.com').getEscapedPath() == ''"},
		{expr: "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}"},
		{expr: "url('https://example.com/path?key with spaces=value with spaces').getQuery() == {'key with spaces': ['value with spaces']}"},
		{expr: "url('https://example.com/path?').getQuery() == {}"},
		{expr: "url('https://example.com/a') == url('https://example.com/a') && url('https://example.com/a') != url('https://example.com/b')"},
		// IP addresses
		{expr: "isIP('127.0.0.1') && isIP('::1') && !isIP('127.0.0.256') && !isIP(':::1') && !isIP('::ffff:1.2.3.4') && !isIP('fe80::1%eth0')"},
		{expr: "ip('127.0.0.256') == ip('::1')", err: `IP Address "127.0.0.256" parse error during conversion from string: ParseAddr("127.0.0.256"): IPv4 field has value >255`},
		{expr: "ip('::ffff:1.2.3.4') == ip('::1')", err: `IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed`},
		{expr: "ip.isCanonical('127.0.0.1') && ip.isCanonical('2001:db8::abcd') && !ip.isCanonical('2001:DB8::ABCD') && !ip.isCanonical('2001:db8::0:0:0:abcd')"},
		{expr: "ip('127.0.0.1').family() == 4 && ip('::1').family() == 6"},
		{expr: "ip('0.0.0.0').isUnspecified() && ip('::').isUnspecified() && !ip('::1').isUnspecified()"},
		{expr: "ip('127.0.0.1').isLoopback() && !ip('192.168.0.1').isLoopback() && ip('::1').isLoopback()"},
		{expr: "ip('224.0.0.1').isLinkLocalMulticast() && !ip('224.0.1.1').isLinkLocalMulticast() && ip('ff02::1').isLinkLocalMulticast()"},
		{expr: "ip('169.254.169.254').isLinkLocalUnicast() && ip('fe80::1').isLinkLocalUnicast() && !ip('fd80::1').isLinkLocalUnicast()"},
		{expr: "ip('192.168.0.1').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast() && !ip('ff00::1').isGlobalUnicast()"},
		{expr: "string(ip('2001:db8:0:0::1')) == '2001:db8::1' && ip('::1') == ip('0:0::1')"},
		// CIDRs
		{expr: "isCIDR('192.168.0.0/16') && isCIDR('::1/128') && !isCIDR('192.168.0.0/33') && !isCIDR('::1/129')"},
		{expr: "cidr('192.168.0.0/24').containsIP(ip('192.168.0.1')) && !cidr('192.168.0.0/24').containsIP('192.168.1.1')"},
		{expr: "cidr('192.168.0.0/16').containsCIDR(cidr('192.168.10.0/24')) && !cidr('192.168.1.0/24').containsCIDR('192.168.2.0/24')"},
		{expr: "cidr('192.168.0.1/24').ip() == ip('192.168.0.1') && cidr('::1/128').ip().family() == 6"},
		{expr: "cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24') && cidr('192.168.0.1/24') != cidr('192.168.0.1/24').masked()"},
		{expr: "cidr('192.168.0.0/24').prefixLength() == 24 && string(cidr('::1/128')) == '::1/128'"},
		{expr: "cidr('10.0.0.0/8').containsCIDR('x')", err: `network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix("x"): no '/'`},
		// Quantities
		{expr: "isQuantity('1.3G') && isQuantity('1.3Gi') && !isQuantity('1,3G') && isQuantity('10000k') && !isQuantity('200K') && !isQuantity('Three') && isQuantity('Mi')"}, // Mi: 0 (the documentation says false),
		{expr: "quantity('200K') == quantity('1')", err: "unable to parse quantity's suffix"},
		{expr: "quantity('50000000G').isInteger() && quantity('50k').isInteger() && !quantity('9999999999999999999999999999999999999G').isInteger()"},
		{expr: "quantity('9999999999999999999999999999999999999G').asInteger() == 1", err: "cannot convert value to integer"},
		{expr: "quantity('50k').asInteger() == 50000 && quantity('50k').sub(20000).asApproximateFloat() == 30000.0"},
		{expr: "quantity('50k').add(quantity('20k')) == quantity('70k') && quantity('50k').add(20) == quantity('50020')"},
		{expr: "quantity('50k').add(20).sub(quantity('100k')).sub(-50000) == quantity('20')"},
		{expr: "quantity('200M').compareTo(quantity('0.2G')) == 0 && quantity('50M').compareTo(quantity('50Mi')) == -1 && quantity('50Mi').compareTo(quantity('50M')) == 1"},
		{expr: "quantity('150Mi').isGreaterThan(quantity('100Mi')) && !quantity('50Mi').isGreaterThan(quantity('100Mi'))"},
		{expr: "quantity('50M').isLessThan(quantity('100M')) && !quantity('100M').isLessThan(quantity('50M'))"},
		{expr: "sign(quantity('-1')) == -1 && sign(quantity('0')) == 0 && sign(quantity('3k')) == 1"},
		// Formats
		{expr: "!format.dns1123Label().validate('my-label-name').hasValue() && format.dns1123Label().validate('My_Name').hasValue()"},
		{expr: "format.named('dns1123Subdomain').value().validate('apiextensions.k8s.io') == optional.none() && !format.named('nope').hasValue()"},
		{expr: "format.qualifiedName().validate('apiextensions.k8s.io/v1beta1') == optional.none() && format.uuid().validate('x') == optional.of(['does not match the UUID format'])"},
		{expr: "format.uri().validate('http://example.com') == optional.none() && format.byte().validate('aGVsbG8=') == optional.none()"},
		{expr: "format.date().validate('2021-01-01') == optional.none() && format.datetime().validate('2021-01-01') == optional.of(['invalid datetime'])"},
		// Regular expressions
		{expr: "'abc 123'.find('[0-9]+') == '123' && 'abc 123'.find('xyz') == ''"},
		{expr: "'123 abc 456'.findAll('[0-9]+') == ['123', '456'] && '123 abc 456'.findAll('[0-9]+', 1) == ['123'] && '123 abc 456'.findAll('xyz') == []"},
		{expr: "'abc'.find(self) == ''", err: "Illegal regex: error parsing regexp: missing closing ]: `[`"},
		// Lists
		{expr: "[1, 2, 3].isSorted() && ['a', 'b', 'b', 'c'].isSorted() && ![2.0, 1.0].isSorted() && [1].isSorted() && [].isSorted()"},
		{expr: "[1, 3].sum() == 4 && [1.0, 3.0].sum() == 4.0 && [duration('1m'), duration('1s')].sum() == duration('1m1s') && [].sum() == 0"},
		{expr: "[1, 3].min() == 1 && [1, 3].max() == 3 && [1].min() == 1 && ['b', 'a'].min() == 'a' && [2.5, 1.0].max() == 2.5"},
		{expr: "[].min() == 1", err: "min called on empty list"},
		{expr: "[1, 2, 2, 3].indexOf(2) == 1 && ['a', 'b', 'b', 'c'].lastIndexOf('b') == 2 && [1.0].indexOf(1.1) == -1 && [].indexOf('string') == -1"},
		// cel-go extensions of kube-apiserver's environment
		{expr: "'a,b'.split(',') == ['a', 'b'] && sets.contains([1, 2], [2]) && [3, 1, 2].sort() == [1, 2, 3] && [1, 2].all(i, v, i < v)"},
	} {
		out, err := evalCEL(t, tc.expr, "[")
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.expr, err)
		case tc.err == "" && out != true:
			t.Errorf("%s: %v, want true", tc.expr, out)
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%s: error %v, want %s", tc.expr, err, tc.err)
		}
	}
}

// TestCELEnvironmentIsKubeAPIServers: what kube-apiserver 1.37 does not
// have is refused, and an evaluation costs at most the per-call limit.
func TestCELEnvironmentIsKubeAPIServers(t *testing.T) {
	for _, expr := range []string{"math.greatest(1, 2) == 2", "regex.replace('a', 'a', 'b') == 'b'", "base64.encode(b'a') == 'YQ=='"} {
		if _, err := evalCEL(t, expr, nil); err == nil || !strings.Contains(err.Error(), "undeclared reference") {
			t.Errorf("%s: %v, want an undeclared reference", expr, err)
		}
	}
	_, err := evalCEL(t, "self.all(x, self.all(y, self.all(z, x + y + z != '')))", strings.Split(strings.Repeat("a", 200), ""))
	if err == nil || !strings.HasPrefix(err.Error(), CostLimitExceeded) {
		t.Errorf("an expensive expression: %v", err)
	}
}

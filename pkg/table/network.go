// The cells of Services, Endpoints, EndpointSlices, Ingresses and
// IngressClasses: IPs, ports, addresses, hosts and the default class.

package table

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// clusterIP is a service's (first) cluster IP, "<none>" without one.
func clusterIP(v []raw, _ *row) any {
	for ip := range v[0].elements() {
		return ip.str()
	}
	return or(v[1].str(), "<none>")
}

// externalIP is a service's external IPs as its type has them: the
// external IPs, a load balancer's ingress points ("<pending>" before it
// has any) or the external name.
func externalIP(v []raw, _ *row) any {
	typ, externalName := v[0].str(), v[3].str()
	var ips []string
	for ip := range v[1].elements() {
		ips = append(ips, ip.str())
	}
	switch typ {
	case "ClusterIP", "NodePort":
		return or(strings.Join(ips, ","), "<none>")
	case "LoadBalancer":
		lb := loadBalancerIngress(v[2])
		if len(ips) > 0 {
			if lb != "" {
				ips = append(strings.Split(lb, ","), ips...)
			}
			return strings.Join(ips, ",")
		}
		return or(lb, "<pending>")
	case "ExternalName":
		return externalName
	}
	return "<unknown>"
}

// loadBalancerIngress is the sorted IPs (or host names) of a load
// balancer's ingress points, separated by commas.
func loadBalancerIngress(ingress raw) string {
	var addresses []string
	for i := range ingress.elements() {
		if a := or(i.get("ip").str(), i.get("hostname").str()); a != "" {
			addresses = append(addresses, a)
		}
	}
	sort.Strings(addresses)
	return strings.Join(slices.Compact(addresses), ",")
}

// loadBalancerAddress is an ingress's Address: its load balancer's
// ingress points.
func loadBalancerAddress(v []raw, _ *row) any { return loadBalancerIngress(v[0]) }

// servicePorts are a service's ports as "80/TCP" or "80:30080/TCP" (with
// a node port), "<none>" without any.
func servicePorts(v []raw, _ *row) any {
	var ports []string
	for p := range v[0].elements() {
		port, nodePort, protocol := p.get("port").int(), p.get("nodePort").int(), p.get("protocol").str()
		if nodePort > 0 {
			ports = append(ports, fmt.Sprintf("%d:%d/%s", port, nodePort, protocol))
		} else {
			ports = append(ports, fmt.Sprintf("%d/%s", port, protocol))
		}
	}
	return or(strings.Join(ports, ","), "<none>")
}

// maxListed is how many items a list cell shows before "+ N more...".
const maxListed = 3

// endpoints are an Endpoints' first addresses ("10.0.0.1:80"), "<none>"
// without subsets.
func endpoints(v []raw, _ *row) any {
	subsets := v[0]
	if subsets.count() == 0 {
		return "<none>"
	}
	var list []string
	total, more := 0, false
	add := func(s string) {
		if len(list) == maxListed {
			more = true
			return
		}
		list = append(list, s)
	}
	for s := range subsets.elements() {
		var ips []string
		for a := range s.get("addresses").elements() {
			ips = append(ips, a.get("ip").str())
		}
		ports := s.get("ports")
		if ports.count() == 0 { // a headless service's
			total += len(ips)
			for _, ip := range ips {
				add(ip)
			}
			continue
		}
		for p := range ports.elements() {
			total += len(ips)
			port := strconv.FormatInt(p.get("port").int(), 10)
			for _, ip := range ips {
				add(net.JoinHostPort(ip, port))
			}
		}
	}
	text := strings.Join(list, ",")
	if more {
		return fmt.Sprintf("%s + %d more...", text, total-maxListed)
	}
	return text
}

// slicePorts are an EndpointSlice's first ports (a name when it has no
// number, "*" with neither).
func slicePorts(v []raw, _ *row) any {
	var list []string
	total := 0
	for p := range v[0].elements() {
		total++
		if len(list) < maxListed {
			port, name := p.get("port"), p.get("name")
			switch {
			case port.present():
				list = append(list, strconv.FormatInt(port.int(), 10))
			case name.present():
				list = append(list, name.str())
			default:
				list = append(list, "*")
			}
		}
	}
	return listed(list, total)
}

// sliceEndpoints are an EndpointSlice's first addresses.
func sliceEndpoints(v []raw, _ *row) any {
	var list []string
	total := 0
	for e := range v[0].elements() {
		for a := range e.get("addresses").elements() {
			total++
			if len(list) < maxListed {
				list = append(list, a.str())
			}
		}
	}
	return listed(list, total)
}

// listed joins the first items of a list of total items, saying how many
// more there are; "<unset>" for none.
func listed(list []string, total int) string {
	text := strings.Join(list, ",")
	if total > maxListed {
		return fmt.Sprintf("%s + %d more...", text, total-maxListed)
	}
	return or(text, "<unset>")
}

// ingressHosts are an ingress's first rules' hosts, "*" without any.
func ingressHosts(v []raw, _ *row) any {
	var hosts []string
	rules, more := 0, false
	for r := range v[0].elements() {
		rules++
		if len(hosts) == maxListed {
			more = true
		}
		if host := r.get("host").str(); !more && host != "" {
			hosts = append(hosts, host)
		}
	}
	if len(hosts) == 0 {
		return "*"
	}
	text := strings.Join(hosts, ",")
	if more {
		return fmt.Sprintf("%s + %d more...", text, rules-maxListed)
	}
	return text
}

// ingressPorts are the ports an ingress opens: 443 too with TLS.
func ingressPorts(v []raw, _ *row) any {
	if v[0].count() != 0 {
		return "80, 443"
	}
	return "80"
}

// ingressClassParameters names an IngressClass's parameters as
// "Kind.group/name", "<none>" without any.
func ingressClassParameters(v []raw, _ *row) any {
	if !v[0].present() {
		return "<none>"
	}
	kind, group, name := v[1].str(), v[2], v[3].str()
	if group.present() {
		kind += "." + group.str()
	}
	return kind + "/" + name
}

// defaultName is the cell of the name of a class, marked "(default)"
// when one of the annotations says it is the default class.
func defaultName(annotations ...string) func(v []raw, _ *row) any {
	return func(v []raw, _ *row) any {
		for _, a := range annotations {
			if v[1].get(a).str() == "true" {
				return v[0].str() + " (default)"
			}
		}
		return v[0].str()
	}
}

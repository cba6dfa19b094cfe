#!/bin/sh
# etcd-certs.sh DIR [NAME=IP]...: in DIR, the certificates of an etcd
# cluster whose members use TLS for their peers and their clients, with
# client certificates both ways (etcd's --client-cert-auth and
# --peer-client-cert-auth):
#   ca.crt, ca.key              the CA (made unless DIR has one)
#   watchcache.crt, .key        watchcache as etcd's client (--etcd-certfile)
#   NAME.crt, NAME.key          each member's certificate for the address
#                               IP: it serves clients and peers and dials
#                               peers (--cert-file and --peer-cert-file)
# Run it again with a new NAME=IP to add a member signed by the same CA.
# TestEtcdTLSCluster runs it; docs/ha.md gives the same commands.
set -eu
cd "$1"
shift
if [ ! -f ca.crt ]; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
		-subj /CN=etcd-ca -keyout ca.key -out ca.crt
fi
# sign NAME EXTENSIONS: NAME.key and NAME.crt, signed by the CA.
sign() {
	printf '%b' "$2" >"$1.ext"
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj "/CN=$1" -keyout "$1.key" -out "$1.csr"
	openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 \
		-extfile "$1.ext" -out "$1.crt"
	rm "$1.csr" "$1.ext"
}
if [ ! -f watchcache.crt ]; then
	sign watchcache 'extendedKeyUsage=clientAuth\n'
fi
for member in "$@"; do
	sign "${member%%=*}" "subjectAltName=IP:${member#*=}\nextendedKeyUsage=serverAuth,clientAuth\n"
done

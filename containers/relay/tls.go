package main

// Throw-away TLS material and the mutual-TLS configurations both models use.
//
// Skupper links and ClusterLink peer connections are both mutually authenticated TLS between the gateways, each
// side presenting a certificate issued by a CA the other trusts. The `certs` subcommand writes one CA and ONE
// leaf certificate (serverAuth + clientAuth, with every gateway IP as a SAN) that both relays present; the CA
// key is discarded. TLS 1.3 is the minimum; no session resumption is configured (no client session cache), so
// every connection pays a full handshake - which is what ClusterLink does per application connection.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const (
	caFile      = "ca.pem"
	certFile    = "tls.pem"
	keyFile     = "tls-key.pem"
	gatewayName = "edgebench-gateway"
)

// writeCerts creates dir and writes ca.pem, tls.pem and tls-key.pem (0600) into it.
func writeCerts(dir string, ips []net.IP) error {
	if len(ips) == 0 {
		return errors.New("at least one IP is needed for the certificate's SANs")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "edgebench throw-away CA", Organization: []string{"edgebench"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      pkix.Name{CommonName: gatewayName, Organization: []string{"edgebench"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  ips,
		DNSNames:     []string{gatewayName},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	files := []struct {
		name, typ string
		der       []byte
		mode      os.FileMode
	}{
		{caFile, "CERTIFICATE", caDER, 0o644},
		{certFile, "CERTIFICATE", leafDER, 0o644},
		{keyFile, "PRIVATE KEY", keyDER, 0o600},
	}
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		_ = os.Remove(path) // so that the mode of a fresh file applies
		data := pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der})
		if err := os.WriteFile(path, data, f.mode); err != nil {
			return err
		}
	}
	return nil
}

func randomSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n
}

// parseIPs parses "IP1,IP2,...".
func parseIPs(s string) ([]net.IP, error) {
	var ips []net.IP
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		ip := net.ParseIP(part)
		if ip == nil {
			return nil, fmt.Errorf("not an IP address: %q", part)
		}
		ips = append(ips, ip)
	}
	return ips, nil
}

// tlsConfigs loads dir's material: the server side requires and verifies a client certificate issued by the CA;
// the client side verifies the server against the CA (its IP SAN, ServerName being set per dial).
func tlsConfigs(dir string) (server, client *tls.Config, err error) {
	if dir == "" {
		return nil, nil, errors.New("-certs DIR is required (create it with: edgebench-relay certs -dir DIR -ip ...)")
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, certFile), filepath.Join(dir, keyFile))
	if err != nil {
		return nil, nil, fmt.Errorf("loading the certificate: %w", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, caFile))
	if err != nil {
		return nil, nil, fmt.Errorf("loading the CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, nil, fmt.Errorf("%s holds no certificate", filepath.Join(dir, caFile))
	}
	server = &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
	}
	client = &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
	}
	return server, client, nil
}

// clientFor: the client configuration for dialling addr ("host:port"); the server's certificate must carry host.
func clientFor(base *tls.Config, addr string) *tls.Config {
	c := base.Clone()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		c.ServerName = host
	}
	return c
}

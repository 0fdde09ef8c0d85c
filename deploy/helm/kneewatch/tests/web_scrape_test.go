package tests

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

// The Service's DNS name, as a ServiceMonitor's tlsConfig.serverName names
// it for the certificate.
const serviceDNS = "kneewatch.monitoring.svc"

// writeCertFor writes a self-signed certificate (its own CA) for
// 127.0.0.1 and the given DNS names.
func writeCertFor(t *testing.T, dir string, dnsNames ...string) (certPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(2),
		Subject:               pkix.Name{CommonName: dnsNames[0]},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              dnsNames,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	writeTestFile(t, filepath.Join(dir, "tls.crt"), certPEM)
	writeTestFile(t, filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	return certPEM
}

func writeTestFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// startBinary starts bin with args, output to a log in dir, and stops it
// (by its PID) when the test ends.
func startBinary(t *testing.T, dir, name, bin string, args ...string) (logPath string) {
	t.Helper()
	logPath = filepath.Join(dir, name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return logPath
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// TestTheServiceMonitorScrapesKneewatchOverTLSWithBasicAuth renders the
// chart with web.config (exporter-toolkit TLS and basic auth) and the
// ServiceMonitor's tlsConfig and basicAuth, starts kneewatch with the
// rendered config, web config and arguments (the mounted paths moved under
// a temporary root), and scrapes it with a real Prometheus whose scrape job
// is the ServiceMonitor's endpoint as prometheus-operator turns it into
// one: scheme, path, honor_labels, tls_config (CA and server name from the
// referenced Secret) and basic_auth. That job's target is up; the same job
// without the credentials, or over plain HTTP, is down. The kubelet's
// probes (HTTPS, no credentials) must pass too, or the pod never becomes
// ready.
func TestTheServiceMonitorScrapesKneewatchOverTLSWithBasicAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("runs kneewatch and Prometheus; not in -short")
	}
	prometheusBin := testtools.Path(t, "prometheus")
	bin := kneewatchBinary(t)
	t.Run("TLS and basic auth", func(t *testing.T) { scrapeOverTLS(t, prometheusBin, bin, true) })
	t.Run("TLS alone", func(t *testing.T) { scrapeOverTLS(t, prometheusBin, bin, false) })
}

// scrapeOverTLS is one case of the test above: with or without basic auth.
func scrapeOverTLS(t *testing.T, prometheusBin, bin string, basicAuth bool) {
	dir := t.TempDir()
	root := filepath.Join(dir, "pod") // the pod's filesystem

	const username, password = "prometheus", "scrape-password"
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	port := engine(t)
	users, smAuth := "", ""
	if basicAuth {
		users = fmt.Sprintf("    basic_auth_users:\n      %s: %s\n", username, hash)
		smAuth = "  basicAuth:\n    username: {name: kneewatch-scrape, key: username}\n    password: {name: kneewatch-scrape, key: password}\n"
	}
	values := filepath.Join(dir, "values.yaml")
	writeTestFile(t, values, []byte(fmt.Sprintf(`discovery:
  enabled: false
web:
  config:
    tls_server_config:
      cert_file: /etc/kneewatch-tls/tls.crt
      key_file: /etc/kneewatch-tls/tls.key
%s  tlsSecret: kneewatch-tls
serviceMonitor:
  tlsConfig:
    ca:
      secret: {name: kneewatch-tls, key: ca.crt}
    serverName: %s
%sconfig:
  targets:
    - replica: vllm-0
      namespace: team-a
      pod: vllm-0
      engine: vllm
      metrics_url: http://127.0.0.1:%s/metrics
`, users, serviceDNS, smAuth, port)))
	objs := manifests(t, helmTemplate(t, values))
	deploy := workload(t, objs)
	pod := func(path ...any) any { return dig(deploy, append([]any{"spec", "template", "spec"}, path...)...) }
	moved := func(s string) string {
		return strings.ReplaceAll(s, "/etc/kneewatch", filepath.Join(root, "etc", "kneewatch"))
	}

	// The volumes the chart mounts: its ConfigMap and web-config Secret
	// as rendered, and the user's TLS Secret (tls.crt, tls.key, ca.crt).
	mountOf := map[string]string{}
	mounts, _ := pod("containers", 0, "volumeMounts").([]any)
	for _, m := range mounts {
		mountOf[dig(m, "name").(string)] = dig(m, "mountPath").(string)
	}
	volumes, _ := pod("volumes").([]any)
	for _, v := range volumes {
		name := dig(v, "name").(string)
		at := moved(mountOf[name])
		switch {
		case dig(v, "configMap", "name") != nil:
			cm := find(t, objs, "ConfigMap", dig(v, "configMap", "name").(string))
			items, _ := dig(v, "configMap", "items").([]any)
			for _, it := range items {
				writeTestFile(t, filepath.Join(at, dig(it, "path").(string)), []byte(moved(dig(cm, "data", dig(it, "key").(string)).(string))))
			}
		case dig(v, "secret", "secretName") == "kneewatch-tls":
			ca := writeCertFor(t, at, serviceDNS)
			writeTestFile(t, filepath.Join(at, "ca.crt"), ca)
		case dig(v, "secret", "secretName") != nil:
			s := find(t, objs, "Secret", dig(v, "secret", "secretName").(string))
			data, _ := dig(s, "stringData").(map[string]any)
			for key, text := range data {
				writeTestFile(t, filepath.Join(at, key), []byte(moved(text.(string))))
			}
		}
	}
	for _, want := range []string{"config", "web-config", "web-tls"} {
		if mountOf[want] == "" {
			t.Fatalf("the pod mounts no %s volume: %v", want, mountOf)
		}
	}

	ports, err := freePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	kwAddr := "127.0.0.1:" + strconv.Itoa(ports[0])
	args, _ := pod("containers", 0, "args").([]any)
	var kwArgs []string
	for _, a := range args {
		s := moved(a.(string))
		if strings.HasPrefix(s, "--web.listen-address=") {
			s = "--web.listen-address=" + kwAddr
		}
		kwArgs = append(kwArgs, s)
	}
	if !strings.Contains(strings.Join(kwArgs, " "), "--web.config.file=") {
		t.Fatalf("the chart's arguments pass no --web.config.file: %v", kwArgs)
	}
	kwLog := startBinary(t, dir, "kneewatch", bin, kwArgs...)

	// The kubelet's probes: HTTPS without verifying the certificate, no
	// credentials; 200–399 passes.
	insecure := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	// With basic auth on every path the chart turns them into tcpSocket
	// probes on the metrics port: an httpGet one could only read 401.
	probe := func(name string) (int, error) {
		p, _ := pod("containers", 0, name).(map[string]any)
		switch {
		case dig(p, "tcpSocket", "port") == "http-metrics":
			c, err := net.DialTimeout("tcp", kwAddr, time.Second)
			if err != nil {
				return 0, err
			}
			c.Close()
			return http.StatusOK, nil
		case dig(p, "httpGet") != nil:
			if scheme := strings.ToLower(fmt.Sprint(dig(p, "httpGet", "scheme"))); scheme != "https" {
				return 0, fmt.Errorf("%s is not an HTTPS httpGet probe: %v", name, p)
			}
			resp, err := insecure.Get("https://" + kwAddr + fmt.Sprint(dig(p, "httpGet", "path")))
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return resp.StatusCode, nil
		default:
			return 0, fmt.Errorf("%s is neither httpGet nor tcpSocket on http-metrics: %v", name, p)
		}
	}
	for _, name := range []string{"livenessProbe", "readinessProbe"} {
		p, _ := pod("containers", 0, name).(map[string]any)
		t.Logf("%s as rendered: %v", name, p)
		if tcp := dig(p, "tcpSocket") != nil; tcp != basicAuth {
			t.Errorf("%s is a tcpSocket probe: %v; want one exactly when basic auth guards every path", name, tcp)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, err := probe("readinessProbe")
		if err == nil && code >= 200 && code < 400 {
			t.Logf("readinessProbe as the kubelet runs it (no credentials): %d", code)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kubelet's readinessProbe never passes: %d %v\n%s", code, err, tail(kwLog))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code, err := probe("livenessProbe"); err != nil || code < 200 || code >= 400 {
		t.Errorf("the kubelet's livenessProbe fails: %d %v", code, err)
	}
	// Basic auth guards /metrics.
	if resp, err := insecure.Get("https://" + kwAddr + "/metrics"); err != nil {
		t.Errorf("/metrics: %v", err)
	} else if resp.Body.Close(); basicAuth != (resp.StatusCode == http.StatusUnauthorized) {
		t.Errorf("/metrics without credentials: %s; basic auth on: %v", resp.Status, basicAuth)
	}

	// Prometheus, with the ServiceMonitor's endpoint as its scrape job. The
	// Secrets it references hold what the user put there: the CA, and the
	// username and password whose bcrypt hash web.config holds.
	sm := find(t, objs, "ServiceMonitor", "")
	ep := dig(sm, "spec", "endpoints", 0)
	refs := map[string]any{"tlsConfig.ca.secret.name": "kneewatch-tls", "tlsConfig.ca.secret.key": "ca.crt"}
	if basicAuth {
		refs["basicAuth.username.name"], refs["basicAuth.password.name"] = "kneewatch-scrape", "kneewatch-scrape"
	} else if dig(ep, "basicAuth") != nil {
		t.Errorf("the ServiceMonitor has basicAuth without web.config's basic_auth_users: %v", dig(ep, "basicAuth"))
	}
	for path, want := range refs {
		var keys []any
		for _, k := range strings.Split(path, ".") {
			keys = append(keys, k)
		}
		if got := dig(ep, keys...); got != want {
			t.Errorf("ServiceMonitor endpoint %s = %v, want %v", path, got, want)
		}
	}
	secrets := filepath.Join(dir, "prometheus-secrets")
	writeTestFile(t, filepath.Join(secrets, "ca.crt"), mustRead(t, filepath.Join(moved(mountOf["web-tls"]), "ca.crt")))
	writeTestFile(t, filepath.Join(secrets, "password"), []byte(password))
	job := func(name, scheme string, auth bool) map[string]any {
		j := map[string]any{
			"job_name":        name,
			"honor_labels":    dig(ep, "honorLabels"),
			"scheme":          scheme,
			"metrics_path":    dig(ep, "path"),
			"scrape_interval": "1s",
			"scrape_timeout":  "800ms",
			"tls_config":      map[string]any{"ca_file": filepath.Join(secrets, "ca.crt"), "server_name": dig(ep, "tlsConfig", "serverName")},
			"static_configs":  []any{map[string]any{"targets": []string{kwAddr}}},
		}
		if auth {
			j["basic_auth"] = map[string]any{"username": username, "password_file": filepath.Join(secrets, "password")}
		}
		return j
	}
	const smJob, noAuth, plain = "serviceMonitor/monitoring/kneewatch/0", "without-credentials", "plain-http"
	jobs := []any{job(smJob, fmt.Sprint(dig(ep, "scheme")), basicAuth), job(plain, "http", basicAuth)}
	want := map[string]float64{smJob: 1, plain: 0}
	if basicAuth {
		jobs = append(jobs, job(noAuth, fmt.Sprint(dig(ep, "scheme")), false))
		want[noAuth] = 0
	}
	promCfg, err := yaml.Marshal(map[string]any{"scrape_configs": jobs})
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "prometheus.yml"), promCfg)
	promAddr := "127.0.0.1:" + strconv.Itoa(ports[1])
	promLog := startBinary(t, dir, "prometheus", prometheusBin, "--config.file=prometheus.yml",
		"--storage.tsdb.path="+filepath.Join(dir, "prometheus-data"), "--web.listen-address="+promAddr)

	query := func(q string) map[string]float64 {
		resp, err := http.Get("http://" + promAddr + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		var r struct {
			Data struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
					Value  [2]any            `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if json.NewDecoder(resp.Body).Decode(&r) != nil {
			return nil
		}
		out := map[string]float64{}
		for _, s := range r.Data.Result {
			v, _ := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
			out[s.Metric["job"]] = v
		}
		return out
	}
	var up map[string]float64
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		up = query("up")
		if len(up) == len(want) && up[smJob] == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Prometheus's up: %v, want %v\n--- prometheus ---\n%s\n--- kneewatch ---\n%s", up, want, tail(promLog), tail(kwLog))
		case <-time.After(250 * time.Millisecond):
		}
	}
	t.Logf("Prometheus up by job: %v", up)
	for j, w := range want {
		if up[j] != w {
			t.Errorf("up{job=%q} = %v, want %v", j, up[j], w)
		}
	}
	// What the ServiceMonitor's job scraped: kneewatch's series, with the
	// served replica's namespace kept (honorLabels).
	deadline = time.Now().Add(30 * time.Second)
	for {
		got := query(`kneewatch_target_up{replica="vllm-0",namespace="team-a",source="engine"}`)
		if got[smJob] == 1 {
			t.Logf("scraped over TLS (basic auth %v): kneewatch_target_up{replica=\"vllm-0\",namespace=\"team-a\",source=\"engine\"} = 1 in job %s", basicAuth, smJob)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no kneewatch_target_up of vllm-0 from job %s: %v\n%s", smJob, got, tail(kwLog))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestProbesFollowWhatTheListenerAsksOfClients: the kubelet's probes carry
// no credentials and no client certificate. Where web.config asks for
// either on every path, the default httpGet probes become tcpSocket probes;
// TLS alone only switches them to HTTPS; a probe the user gave headers
// (an Authorization header, say) is left as written.
func TestProbesFollowWhatTheListenerAsksOfClients(t *testing.T) {
	tlsFiles := []string{"--set", "web.config.tls_server_config.cert_file=/etc/kneewatch-tls/tls.crt",
		"--set", "web.config.tls_server_config.key_file=/etc/kneewatch-tls/tls.key", "--set", "web.tlsSecret=kneewatch-tls"}
	users := []string{"--set", "web.config.basic_auth_users.prometheus=$2a$10$GyoPIuM0C78kbjERzrzRJuqXc8aAihIIkGPKNFFS9RvzU5DuDmqJi",
		"--set-json", `serviceMonitor.basicAuth={"username":{"name":"kneewatch-scrape","key":"username"},"password":{"name":"kneewatch-scrape","key":"password"}}`}
	with := func(sets ...[]string) []string {
		var out []string
		for _, s := range sets {
			out = append(out, s...)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		set  []string
		want string // "http", "https" or "tcp"
	}{
		{"plain HTTP keeps httpGet", nil, "http"},
		{"TLS alone makes the httpGet probes HTTPS", tlsFiles, "https"},
		{"basic auth makes them tcpSocket", users, "tcp"},
		{"basic auth over TLS makes them tcpSocket", with(tlsFiles, users), "tcp"},
		{"a required client certificate makes them tcpSocket", with(tlsFiles, []string{"--set", "web.config.tls_server_config.client_auth_type=RequireAndVerifyClientCert",
			"--set", "web.config.tls_server_config.client_ca_file=/etc/kneewatch-tls/ca.crt"}), "tcp"},
		{"an optional client certificate keeps HTTPS httpGet", with(tlsFiles, []string{"--set", "web.config.tls_server_config.client_auth_type=VerifyClientCertIfGiven",
			"--set", "web.config.tls_server_config.client_ca_file=/etc/kneewatch-tls/ca.crt"}), "https"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deploy := workload(t, manifests(t, helmTemplate(t, "", tc.set...)))
			for _, name := range []string{"livenessProbe", "readinessProbe"} {
				p := dig(deploy, "spec", "template", "spec", "containers", 0, name)
				got := "tcp"
				if dig(p, "httpGet") != nil {
					got = "http"
					if dig(p, "httpGet", "scheme") == "HTTPS" {
						got = "https"
					}
				} else if dig(p, "tcpSocket", "port") != "http-metrics" {
					t.Errorf("%s is neither httpGet nor tcpSocket on http-metrics: %v", name, p)
				}
				if got != tc.want {
					t.Errorf("%s is %s (%v), want %s", name, got, p, tc.want)
				}
				if tc.want == "tcp" && dig(p, "periodSeconds") == nil {
					t.Errorf("%s lost its timings: %v", name, p)
				}
			}
		})
	}
	t.Run("a probe the user gave an Authorization header stays httpGet", func(t *testing.T) {
		set := with(tlsFiles, users, []string{"--set-json", `livenessProbe={"httpGet":{"path":"/-/healthy","port":"http-metrics","httpHeaders":[{"name":"Authorization","value":"Basic cHJvbWV0aGV1czpzY3JhcGUtcGFzc3dvcmQ="}]},"periodSeconds":10}`})
		deploy := workload(t, manifests(t, helmTemplate(t, "", set...)))
		p := dig(deploy, "spec", "template", "spec", "containers", 0, "livenessProbe")
		if dig(p, "httpGet", "httpHeaders") == nil || dig(p, "httpGet", "scheme") != "HTTPS" {
			t.Errorf("livenessProbe = %v, want the user's httpGet with its header, over HTTPS", p)
		}
	})
}

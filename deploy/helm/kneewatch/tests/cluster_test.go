package tests

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

// cluster is an etcd and a kube-apiserver on loopback ports, with the
// prometheus-operator CRDs installed. There are no controllers, scheduler
// or kubelet: objects are stored and served, nothing runs.
type cluster struct {
	dir        string
	etcd, kas  *process
	kubeconfig string // admin kubeconfig, for helm
	config     *rest.Config
	client     kubernetes.Interface
	dynamic    dynamic.Interface
	mapper     *restmapper.DeferredDiscoveryRESTMapper
	// kasBin and kasArgs start the API server again after stopAPIServer,
	// on the same port with the same certificates and keys.
	kasBin  string
	kasArgs []string
}

// process is a started tool whose exit is awaited once.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func start(name, logFile string, bin string, args ...string) (*process, error) {
	f, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	// Should the test binary die (panic, -timeout), take the servers with
	// it rather than leave them holding ports.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logFile, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop asks the process to end (SIGTERM) and waits for it, killing it after
// a grace period, so its ports are free when stop returns.
func (p *process) stop() error {
	if p == nil || p.exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within 20s of SIGTERM; killed", p.name)
	}
}

// tail is the end of the process's log, for error messages.
func (p *process) tail() string {
	data, _ := os.ReadFile(p.log)
	if len(data) > 3000 {
		data = data[len(data)-3000:]
	}
	return fmt.Sprintf("--- last of %s ---\n%s", p.log, data)
}

var shared struct {
	once sync.Once
	c    *cluster
	err  error
}

// sharedCluster returns the test binary's cluster, starting it on first use.
func sharedCluster(t *testing.T) *cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver; not in -short")
	}
	etcd := testtools.Path(t, "etcd")
	kas := testtools.Path(t, "kube-apiserver")
	testtools.Path(t, "helm")
	crds := filepath.Join(kubeSchemas(t), "crds")
	shared.once.Do(func() {
		began := time.Now()
		shared.c, shared.err = startCluster(etcd, kas, crds)
		if shared.err == nil {
			t.Logf("etcd + kube-apiserver ready with CRDs in %s", time.Since(began).Round(time.Millisecond))
		}
	})
	if shared.err != nil {
		t.Fatalf("starting the test cluster: %v", shared.err)
	}
	return shared.c
}

func stopSharedCluster() error {
	if shared.c == nil {
		return nil
	}
	return shared.c.stop()
}

func (c *cluster) stop() error {
	err := errors.Join(c.kas.stop(), c.etcd.stop())
	if err == nil {
		err = os.RemoveAll(c.dir)
	}
	return err
}

func startCluster(etcdBin, kasBin, crdDir string) (_ *cluster, err error) {
	dir, err := os.MkdirTemp("", "kneewatch-kube-*")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir}
	defer func() {
		if err != nil {
			if c.kas != nil {
				err = fmt.Errorf("%w\n%s", err, c.kas.tail())
			}
			if c.etcd != nil {
				err = fmt.Errorf("%w\n%s", err, c.etcd.tail())
			}
			_ = c.kas.stop()
			_ = c.etcd.stop()
		}
	}()
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	c.etcd, err = start("etcd", filepath.Join(dir, "etcd.log"), etcdBin,
		"--name=kw", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=kw="+peerURL,
		"--unsafe-no-fsync", // a throwaway store: durability buys nothing here
		"--log-level=warn")
	if err != nil {
		return c, err
	}
	if err := waitFor(30*time.Second, c.etcd, func() error { return httpOK(etcdURL + "/health") }); err != nil {
		return c, fmt.Errorf("etcd never became healthy: %w", err)
	}

	certFile, keyFile, caPEM, err := writeServingCert(dir)
	if err != nil {
		return c, err
	}
	saKey, saPub, err := writeServiceAccountKey(dir)
	if err != nil {
		return c, err
	}
	token := randomHex(16)
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(token+",admin,admin,system:masters\n"), 0o600); err != nil {
		return c, err
	}
	server := "https://127.0.0.1:" + strconv.Itoa(ports[2])
	c.kasBin = kasBin
	c.kasArgs = []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports[2]),
		"--tls-cert-file=" + certFile, "--tls-private-key-file=" + keyFile,
		"--token-auth-file=" + tokens, "--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saPub, "--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.96.0.0/24",
		// On loopback the default reconciler fails to publish the
		// kubernetes Service's endpoints; nothing here needs them.
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--profiling=false",
	}
	if c.kas, err = start("kube-apiserver", filepath.Join(dir, "kube-apiserver.log"), kasBin, c.kasArgs...); err != nil {
		return c, err
	}

	c.config = &rest.Config{
		Host:            server,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
		QPS:             100,
		Burst:           200,
	}
	if c.client, err = kubernetes.NewForConfig(c.config); err != nil {
		return c, err
	}
	if err := waitFor(3*time.Minute, c.kas, func() error {
		_, err := c.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		return err
	}); err != nil {
		return c, fmt.Errorf("kube-apiserver never became ready: %w", err)
	}
	if c.dynamic, err = dynamic.NewForConfig(c.config); err != nil {
		return c, err
	}
	c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.client.Discovery()))
	if c.kubeconfig, err = writeKubeconfig(dir, server, caPEM, token); err != nil {
		return c, err
	}
	if crdDir == "" {
		return c, nil // a cluster of its own without prometheus-operator's CRDs
	}
	if err := c.installCRDs(crdDir); err != nil {
		return c, err
	}
	return c, nil
}

// killAPIServer kills the API server (etcd keeps running), as a crash
// would: an outage. (SIGTERM with watches open took over 20 s to end.)
func (c *cluster) killAPIServer() {
	_ = c.kas.cmd.Process.Kill()
	<-c.kas.done
}

// startAPIServer starts the killed API server again and waits until it is
// ready.
func (c *cluster) startAPIServer() error {
	kas, err := start("kube-apiserver", filepath.Join(c.dir, "kube-apiserver-restarted.log"), c.kasBin, c.kasArgs...)
	if err != nil {
		return err
	}
	c.kas = kas
	return waitFor(3*time.Minute, c.kas, func() error {
		_, err := c.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		return err
	})
}

// installCRDs creates every CRD manifest in dir and waits until the API
// server serves each.
func (c *cluster) installCRDs(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRD manifests in %s (run `make tools`)", dir)
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	ctx := context.Background()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var obj unstructured.Unstructured
		if err := yaml.Unmarshal(data, &obj.Object); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if _, err := c.dynamic.Resource(crdGVR).Create(ctx, &obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating CRD from %s: %w", filepath.Base(f), err)
		}
		name := obj.GetName()
		err = waitFor(30*time.Second, c.kas, func() error {
			got, err := c.dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, cond := range conds {
				m, _ := cond.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return nil
				}
			}
			return fmt.Errorf("CRD %s not established yet", name)
		})
		if err != nil {
			return err
		}
	}
	c.mapper.Reset()
	return nil
}

// resource maps a kind to the resource serving it.
func (c *cluster) resource(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	return m, err
}

// waitFor polls check until it succeeds, the deadline passes, or the
// process it waits on exits.
func waitFor(timeout time.Duration, p *process, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if p != nil && p.exited() {
			return fmt.Errorf("%s exited (%v) while waiting: %w", p.name, p.err, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// httpOK checks etcd's /health endpoint.
func httpOK(url string) error {
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return err
	}
	if !strings.Contains(string(body), `"health":"true"`) {
		return fmt.Errorf("%s says %s", url, body)
	}
	return nil
}

// freePorts finds n loopback ports nothing listens on now.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// writeServingCert writes a self-signed certificate for 127.0.0.1 and
// localhost; it is also the CA clients trust.
func writeServingCert(dir string) (certFile, keyFile string, certPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return "", "", nil, err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", nil, err
	}
	return certFile, keyFile, certPEM, nil
}

// writeServiceAccountKey writes the key pair service account tokens are
// signed and checked with.
func writeServiceAccountKey(dir string) (keyFile, pubFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	keyFile, pubFile = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		return "", "", err
	}
	return keyFile, pubFile, nil
}

// writeKubeconfig writes the admin kubeconfig helm uses.
func writeKubeconfig(dir, server string, caPEM []byte, token string) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "test"
	path := filepath.Join(dir, "kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

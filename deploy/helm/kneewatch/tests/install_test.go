package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

// releaseKinds are every kind the chart can create, for the orphan check.
var releaseKinds = []schema.GroupVersionResource{
	{Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "services"},
	{Version: "v1", Resource: "serviceaccounts"},
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
	{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"},
	{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheusrules"},
}

// helm runs the real helm against the test cluster.
func (c *cluster) helm(t *testing.T, args ...string) []byte {
	t.Helper()
	return command(t, helmEnv(t, c.kubeconfig), nil, testtools.Path(t, "helm"), args...)
}

func (c *cluster) createNamespaces(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		_, err := c.client.CoreV1().Namespaces().Create(context.Background(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating namespace %s: %v", n, err)
		}
	}
}

// objectID names an object for comparisons: resource, namespace, name.
type objectID struct{ Resource, Namespace, Name string }

func (o objectID) String() string { return o.Resource + " " + o.Namespace + "/" + o.Name }

// releaseManifest is the set of objects helm says the release holds.
func (c *cluster) releaseManifest(t *testing.T, release, namespace string) []objectID {
	t.Helper()
	manifest := c.helm(t, "get", "manifest", release, "--namespace", namespace)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var ids []objectID
	for {
		var obj unstructured.Unstructured
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("helm get manifest: %v", err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		m, err := c.resource(obj.GroupVersionKind())
		if err != nil {
			t.Fatalf("the API server does not serve %s: %v", obj.GroupVersionKind(), err)
		}
		ns := obj.GetNamespace()
		if m.Scope.Name() == "namespace" && ns == "" {
			ns = namespace
		}
		ids = append(ids, objectID{m.Resource.Resource, ns, obj.GetName()})
	}
	slices.SortFunc(ids, func(a, b objectID) int { return strings.Compare(a.String(), b.String()) })
	return ids
}

// releaseObjects lists what the API server holds with the release's
// instance label, across every kind the chart can create.
func (c *cluster) releaseObjects(t *testing.T, release string) []objectID {
	t.Helper()
	var ids []objectID
	for _, gvr := range releaseKinds {
		list, err := c.dynamic.Resource(gvr).List(context.Background(),
			metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release})
		if err != nil {
			t.Fatalf("listing %s: %v", gvr.Resource, err)
		}
		for _, o := range list.Items {
			ids = append(ids, objectID{gvr.Resource, o.GetNamespace(), o.GetName()})
		}
	}
	slices.SortFunc(ids, func(a, b objectID) int { return strings.Compare(a.String(), b.String()) })
	return ids
}

// serviceAccountClient is a client authenticated as a service account, with
// a token from the TokenRequest API as the kubelet would mount it.
func (c *cluster) serviceAccountClient(t *testing.T, namespace, name string) kubernetes.Interface {
	t.Helper()
	tr, err := c.client.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for service account %s/%s: %v", namespace, name, err)
	}
	cfg := rest.CopyConfig(c.config)
	cfg.BearerToken = tr.Status.Token
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// access is one question asked with a SelfSubjectAccessReview.
type access struct {
	verb, resource, namespace string
	allowed                   bool
}

func (a access) String() string {
	ns := a.namespace
	if ns == "" {
		ns = "every namespace"
	}
	return fmt.Sprintf("%s %s in %s", a.verb, a.resource, ns)
}

func checkAccess(t *testing.T, client kubernetes.Interface, questions []access) {
	t.Helper()
	for _, q := range questions {
		r, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(),
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: q.namespace, Verb: q.verb, Resource: q.resource},
			}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("access review %s: %v", q, err)
		}
		if r.Status.Allowed != q.allowed {
			t.Errorf("can-i %s = %v, want %v (%s)", q, r.Status.Allowed, q.allowed, r.Status.Reason)
		}
	}
}

func TestHelmInstallUpgradeUninstall(t *testing.T) {
	c := sharedCluster(t)
	const release, ns = "kneewatch", "kw-install"
	c.createNamespaces(t, "llm-a", "llm-b", "gpu-i", "kw-install")
	ctx := context.Background()

	t.Run("helm install creates every object of the chart", func(t *testing.T) {
		c.helm(t, "install", release, chartDir(), "--namespace", ns, "--values", "testdata/values-install.yaml")
		manifest := c.releaseManifest(t, release, ns)
		var kinds []string
		for _, id := range manifest {
			if !slices.Contains(kinds, id.Resource) {
				kinds = append(kinds, id.Resource)
			}
		}
		wantKinds := []string{"configmaps", "deployments", "networkpolicies", "prometheusrules", "rolebindings", "roles", "serviceaccounts", "servicemonitors", "services"}
		slices.Sort(kinds)
		if diff := cmp.Diff(wantKinds, kinds); diff != "" {
			t.Errorf("kinds in the release (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(manifest, c.releaseObjects(t, release)); diff != "" {
			t.Errorf("objects in the API server differ from the release manifest (-manifest +server):\n%s", diff)
		}
		for _, want := range []objectID{
			{"roles", "llm-a", "kneewatch"}, {"roles", "llm-b", "kneewatch"}, {"roles", "gpu-i", "kneewatch"},
			{"configmaps", ns, "kneewatch-fleet-dashboard"}, {"configmaps", ns, "kneewatch-replica-dashboard"},
		} {
			if !slices.Contains(manifest, want) {
				t.Errorf("release lacks %s", want)
			}
		}
	})

	t.Run("the service account may read pods in the watched namespaces and nothing else", func(t *testing.T) {
		sa := c.serviceAccountClient(t, ns, "kneewatch")
		checkAccess(t, sa, []access{
			{"list", "pods", "llm-a", true},
			{"watch", "pods", "llm-b", true},
			{"get", "pods", "gpu-i", true},
			{"list", "pods", ns, false},
			{"list", "pods", "", false},
			{"get", "secrets", "llm-a", false},
			{"get", "secrets", ns, false},
			{"list", "secrets", "", false},
			{"create", "pods", "llm-a", false},
			{"delete", "pods", "llm-a", false},
			{"list", "configmaps", "llm-a", false},
			{"list", "nodes", "", false},
		})
		// The same answers from real requests.
		if _, err := sa.CoreV1().Pods("llm-a").List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("listing pods as the service account: %v", err)
		}
		if _, err := sa.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("listing secrets as the service account: err = %v, want forbidden", err)
		}
	})

	t.Run("helm upgrade with changed values leaves no orphans", func(t *testing.T) {
		before, err := c.client.AppsV1().Deployments(ns).Get(ctx, release, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c.helm(t, "upgrade", release, chartDir(), "--namespace", ns, "--values", "testdata/values-upgrade.yaml")
		manifest := c.releaseManifest(t, release, ns)
		if diff := cmp.Diff(manifest, c.releaseObjects(t, release)); diff != "" {
			t.Errorf("objects in the API server differ from the upgraded manifest (-manifest +server):\n%s", diff)
		}
		for _, gone := range []objectID{
			{"roles", "llm-b", "kneewatch"}, {"rolebindings", "llm-b", "kneewatch"},
			{"configmaps", ns, "kneewatch-fleet-dashboard"}, {"networkpolicies", ns, "kneewatch"},
		} {
			if slices.Contains(manifest, gone) {
				t.Errorf("upgraded release still holds %s", gone)
			}
		}
		cm, err := c.client.CoreV1().ConfigMaps(ns).Get(ctx, release, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(cm.Data["kneewatch.yml"], "target_headroom: 0.3") {
			t.Errorf("config not upgraded:\n%s", cm.Data["kneewatch.yml"])
		}
		after, err := c.client.AppsV1().Deployments(ns).Get(ctx, release, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		const sum = "checksum/config"
		if before.Spec.Template.Annotations[sum] == after.Spec.Template.Annotations[sum] {
			t.Errorf("the pod template's %s did not change with the config, so the pod would keep the old one", sum)
		}
		checkAccess(t, c.serviceAccountClient(t, ns, "kneewatch"), []access{
			{"list", "pods", "llm-a", true},
			{"list", "pods", "llm-b", false},
		})
	})

	t.Run("helm uninstall leaves no object behind", func(t *testing.T) {
		c.helm(t, "uninstall", release, "--namespace", ns)
		if left := c.releaseObjects(t, release); len(left) > 0 {
			t.Errorf("objects left after uninstall: %v", left)
		}
		secrets, err := c.client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + release})
		if err != nil {
			t.Fatal(err)
		}
		if len(secrets.Items) > 0 {
			t.Errorf("helm release records left after uninstall: %d", len(secrets.Items))
		}
	})
}

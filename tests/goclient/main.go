// protoclient: a client-go program that talks to an API server the way Go clients do by default, in protobuf
// (Content-Type and Accept application/vnd.kubernetes.protobuf for built-in kinds, DeleteOptions in every
// delete's body, the protobuf watch stream). tests/apiserver/test_server_protobuf.py and
// tests/conformance/test_protobuf.py run it against the embedded (and the real) API server.
//
// Usage: protoclient scenario KUBECONFIG NAMESPACE   one JSON line per step: what the client decoded, or the Status
//
//	protoclient bench KUBECONFIG NAMESPACE N    median create+get of a pod in protobuf and in JSON (µs)
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func ptr[T any](v T) *T { return &v }

func emit(step string, v any, err error) {
	out := map[string]any{"step": step}
	if err != nil {
		if st, ok := err.(apierrors.APIStatus); ok {
			s := st.Status()
			out["status"] = map[string]any{"code": s.Code, "reason": s.Reason, "message": s.Message}
		} else {
			out["error"] = err.Error()
		}
	} else {
		out["object"] = v
	}
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
}

// Pod is a realistic pod: probes, volumes, security contexts, resources, tolerations, pointer zeros.
func Pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "pb"},
			Annotations: map[string]string{"note": "protobuf"}},
		Spec: corev1.PodSpec{
			SchedulerName:                 "no-such-scheduler",
			TerminationGracePeriodSeconds: ptr(int64(0)),
			AutomountServiceAccountToken:  ptr(false),
			ActiveDeadlineSeconds:         ptr(int64(600)),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(1000)),
				FSGroup: ptr(int64(2000)), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "c", Image: "mockgpu/workload", Command: []string{"sleep", "60"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "POD", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"),
						corev1.ResourceMemory: resource.MustParse("128Mi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"),
						corev1.ResourceMemory: resource.MustParse("64Mi")}},
				VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}, {Name: "cfg", MountPath: "/cfg", ReadOnly: true}},
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
					Path: "/healthz", Port: intstr.FromInt32(8080)}}, InitialDelaySeconds: 3, PeriodSeconds: 10},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{
					Port: intstr.FromString("http")}}},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false), Privileged: ptr(false),
					ReadOnlyRootFilesystem: ptr(true), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
			Volumes: []corev1.Volume{
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
					SizeLimit: ptr(resource.MustParse("1Gi"))}}},
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, DefaultMode: ptr(int32(0o440))}}},
			},
			Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoSchedule}, {Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(0))}},
			NodeSelector: map[string]string{"mockgpu.io/fake": "true"},
		},
	}
}

func clientset(kubeconfig, contentType string) *kubernetes.Clientset {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		panic(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	if contentType != "" {
		cfg.ContentType = contentType
		cfg.AcceptContentTypes = contentType
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

func scenario(cs *kubernetes.Clientset, ns string) {
	ctx := context.Background()
	pods := cs.CoreV1().Pods(ns)
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	emit("create namespace", nil, err)
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": {0, 1, 2}}}, metav1.CreateOptions{})
	emit("create configmap", cm, err)

	w, werr := pods.Watch(ctx, metav1.ListOptions{LabelSelector: "app=pb"})
	created, err := pods.Create(ctx, Pod("pb"), metav1.CreateOptions{})
	emit("create pod", created, err)
	got, err := pods.Get(ctx, "pb", metav1.GetOptions{})
	emit("get pod", got, err)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=pb"})
	if err == nil {
		emit("list pods", map[string]any{"kind": list.Kind, "items": len(list.Items), "names": []string{list.Items[0].Name},
			"hasResourceVersion": list.ResourceVersion != ""}, nil)
	} else {
		emit("list pods", nil, err)
	}
	if werr != nil {
		emit("watch pods", nil, werr)
	} else {
		select {
		case ev := <-w.ResultChan():
			p, _ := ev.Object.(*corev1.Pod)
			name := ""
			if p != nil {
				name = p.Name
			}
			emit("watch pods", map[string]any{"type": ev.Type, "name": name, "same": p != nil && p.Spec.Containers[0].LivenessProbe.HTTPGet.Port.IntVal == 8080}, nil)
		case <-time.After(10 * time.Second):
			emit("watch pods", nil, fmt.Errorf("no event in 10s"))
		}
		w.Stop()
	}

	got.Status.Conditions = []corev1.PodCondition{{Type: "Example", Status: corev1.ConditionTrue, Reason: "Set"}}
	st, err := pods.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	if err == nil {
		emit("update pod status", st.Status.Conditions, nil)
	} else {
		emit("update pod status", nil, err)
	}
	_, err = pods.Get(ctx, "missing", metav1.GetOptions{})
	emit("get missing pod", nil, err)
	_, err = pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name"}}, metav1.CreateOptions{})
	emit("create invalid pod", nil, err)

	dep, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: ptr(intstr.FromString("50%")), MaxUnavailable: ptr(intstr.FromInt32(0))}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "mockgpu/workload"}}}}}}, metav1.CreateOptions{})
	emit("create deployment", dep, err)
	scale, err := cs.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
	emit("get scale", scale, err)
	if err == nil {
		scale.Spec.Replicas = 0
		scaled, err := cs.AppsV1().Deployments(ns).UpdateScale(ctx, "web", &autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 0}}, metav1.UpdateOptions{})
		emit("update scale", scaled, err)
	}
	sar, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: "create", Resource: "pods"}}}, metav1.CreateOptions{})
	if err == nil {
		emit("self subject access review", sar.Status.Allowed, nil)
	} else {
		emit("self subject access review", nil, err)
	}

	_, err = pods.Create(ctx, Pod("evicted"), metav1.CreateOptions{})
	emit("create pod to evict", nil, err)
	err = pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "evicted", Namespace: ns},
		DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}})
	emit("evict pod", nil, err)
	err = pods.Delete(ctx, "pb", metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0)),
		Preconditions: &metav1.Preconditions{UID: ptr(created.UID)}})
	emit("delete pod with preconditions", nil, err)
	err = pods.Delete(ctx, "pb", metav1.DeleteOptions{})
	emit("delete deleted pod", nil, err)
	err = cs.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationBackground)},
		metav1.ListOptions{})
	emit("delete collection of deployments", nil, err)
	deps, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		emit("list deployments after", len(deps.Items), nil)
	} else {
		emit("list deployments after", nil, err)
	}
	_ = watch.Added
}

func bench(kubeconfig, ns string, n int, modes []string) {
	ctx := context.Background()
	result := map[string]float64{}
	for _, mode := range modes {
		cs := clientset(kubeconfig, mode)
		pods := cs.CoreV1().Pods(ns)
		times := make([]float64, 0, n)
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("bench-%d", i)
			start := time.Now()
			if _, err := pods.Create(ctx, Pod(name), metav1.CreateOptions{}); err != nil {
				panic(err)
			}
			if _, err := pods.Get(ctx, name, metav1.GetOptions{}); err != nil {
				panic(err)
			}
			times = append(times, float64(time.Since(start).Microseconds()))
			if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
				panic(err)
			}
		}
		sort.Float64s(times)
		result[mode] = times[n/2]
	}
	line, _ := json.Marshal(result)
	fmt.Println(string(line))
}

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: protoclient scenario|bench KUBECONFIG NAMESPACE [N]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "scenario":
		scenario(clientset(os.Args[2], ""), os.Args[3])
	case "bench":
		n := 100
		if len(os.Args) > 4 {
			n, _ = strconv.Atoi(os.Args[4])
		}
		cs := clientset(os.Args[2], "")
		_, _ = cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: os.Args[3]}}, metav1.CreateOptions{})
		modes := []string{"application/vnd.kubernetes.protobuf", "application/json"}
		if len(os.Args) > 5 {
			modes = strings.Split(os.Args[5], ",")
		}
		bench(os.Args[2], os.Args[3], n, modes)
	}
}

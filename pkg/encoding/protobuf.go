// Protobuf request bodies (application/vnd.kubernetes.protobuf) of the
// built-in kinds, decoded with client-go's scheme and converted to JSON.

package encoding

import (
	"encoding/json"

	"github.com/watchcache/watchcache/pkg/apistatus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// ProtobufType is the media type client-go and kubectl use for bodies of
// built-in kinds.
const ProtobufType = "application/vnd.kubernetes.protobuf"

// ProtobufDecoder decodes protobuf bodies of the built-in kinds (the groups
// of resource.Builtins) and of meta/v1 options. Responses are always JSON, which every client
// accepts.
var ProtobufDecoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, rbacv1.AddToScheme,
		authenticationv1.AddToScheme, authorizationv1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme,
		coordinationv1.AddToScheme, discoveryv1.AddToScheme, eventsv1.AddToScheme, networkingv1.AddToScheme, policyv1.AddToScheme,
		schedulingv1.AddToScheme, storagev1.AddToScheme, autoscalingv1.AddToScheme, admissionregistrationv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(scheme).UniversalDeserializer()
}()

// protobufToJSON converts a protobuf body into JSON, checking its kind.
func protobufToJSON(data []byte, kind string) ([]byte, *apierrors.StatusError) {
	obj, gvk, err := ProtobufDecoder.Decode(data, nil, nil)
	if err != nil {
		return nil, apistatus.BadRequest("the protobuf request body cannot be decoded: %v", err)
	}
	if gvk.Kind != kind {
		return nil, apistatus.BadRequest("the kind of the object (%s) does not match the kind of the request (%s)", gvk.Kind, kind)
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, apistatus.BadRequest("the protobuf request body cannot be converted: %v", err)
	}
	return out, nil
}

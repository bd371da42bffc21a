// Package v1alpha1 holds the mysqlfleet.io/v1alpha1 API: the MySQLCluster that application teams write on the
// hub, the labels and annotations that tie hub, members and member objects together, and the condition types and
// reasons the manager reports.
//
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +groupName=mysqlfleet.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "mysqlfleet.io", Version: "v1alpha1"}

	// SchemeGroupVersion is GroupVersion under the name that generated apply configurations use.
	SchemeGroupVersion = GroupVersion

	// SchemeBuilder adds the types of this API to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &MySQLCluster{}, &MySQLClusterList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

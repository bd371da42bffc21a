// Package v1alpha1 holds the mysqlfleet.io/v1alpha1 API: the MySQLCluster that application teams write on the
// hub, the labels and annotations that tie hub, members and member objects together, and the condition types and
// reasons the manager reports.
//
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +groupName=mysqlfleet.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "mysqlfleet.io", Version: "v1alpha1"}

	// SchemeGroupVersion is GroupVersion under the name that generated apply configurations use.
	SchemeGroupVersion = GroupVersion

	// SchemeBuilder adds the types of this API to a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// Rows that owners write one after another within rowsSettle ask for one summary pass, rowsSettle after the
// first of them; another MySQLCluster's rows ask for their own.
func TestRowsSettledSummarisesRowsTogether(t *testing.T) {
	g := NewWithT(t)
	clock := clocktesting.NewFakeClock(time.Unix(1000, 0))
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[mcreconcile.Request](),
		workqueue.TypedRateLimitingQueueConfig[mcreconcile.Request]{Clock: clock})
	defer q.ShutDown()
	h := rowsSettled("", nil)
	update := func(name string) {
		c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		h.Update(context.Background(), event.TypedUpdateEvent[client.Object]{ObjectOld: c, ObjectNew: c}, q)
	}
	update("a")
	clock.Step(rowsSettle / 2)
	update("a")
	update("b")
	g.Consistently(q.Len).WithTimeout(200*time.Millisecond).Should(BeZero(), "nothing before rowsSettle")

	clock.Step(rowsSettle / 2)
	g.Eventually(q.Len).Should(Equal(1), "a's rows, once")
	item, _ := q.Get()
	g.Expect(item.Name).To(Equal("a"))
	q.Done(item)

	clock.Step(rowsSettle / 2)
	g.Eventually(q.Len).Should(Equal(1), "b's rows")
	item, _ = q.Get()
	g.Expect(item.Name).To(Equal("b"))
	q.Done(item)
	clock.Step(rowsSettle)
	g.Consistently(q.Len).WithTimeout(200*time.Millisecond).Should(BeZero(), "a's second rows were summarised by the first pass")
}

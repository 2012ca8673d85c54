// Package console is rocketstore's web console: pages for the cluster and
// its brokers (version, uptime, disk use, put/get rates), topics (queues
// with min/max offsets; create, delete), consumer groups (connections, lag
// per queue, offset reset), message search (by topic and time range, key
// or id, with properties and the consumption state per group), dead-letter
// queues (browse, resend) and live produce/consume charts.
//
// It is an admin client like `rocketstore admin`: everything it shows or
// changes goes through the RocketMQ remoting protocol (package admin) to
// the name servers and brokers it is given, so it works against any
// RocketMQ 4.x cluster too. The pages are plain HTML, CSS and JavaScript
// embedded in the binary; they load nothing from the network.
//
// Security: it listens on loopback unless told otherwise; state-changing
// requests must be POSTs carrying the X-Rocketstore-Console header (which
// a cross-site form cannot send), and destructive ones are confirmed in
// the page first. With Config.ACL set every request needs HTTP basic
// authentication with an ACL account that has admin rights (access key as
// user, secret key as password), and the console signs its requests to the
// brokers with that account.
package console

package mail

// Compose is compose, for the external tests to compare the MIME message a
// transport sent with the one it was asked to send.
var Compose = compose

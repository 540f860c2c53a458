/**
 * The Java testee of the E2A conformance suite ({@code conformance/README.md}), run as {@code java
 * -jar clients/java/target/e2a-conformance-testee.jar}.
 */
package io.e2a.v1.conformance;

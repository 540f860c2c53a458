package io.e2a.v1;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The Python reference server ({@code .venv/bin/python -m e2a_grpc serve}) on a free loopback
 * port, for the tests: started by {@link #start()}, SERVING once it returns, stopped by {@link
 * #close()}.
 */
final class PythonServer implements AutoCloseable {
  private final Process process;
  private final Path log;
  private final ManagedChannel channel;
  private final int port;

  private PythonServer(Process process, Path log, int port) {
    this.process = process;
    this.log = log;
    this.port = port;
    this.channel = ManagedChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
  }

  static Path repoRoot() {
    return Path.of(System.getProperty("e2a.repo.root", "../..")).toAbsolutePath().normalize();
  }

  /** Starts the server and waits (up to 60 s) until its health service says SERVING. */
  static PythonServer start() throws IOException, InterruptedException {
    Path root = repoRoot();
    int port;
    try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = socket.getLocalPort();
    }
    Path log = Files.createTempFile("e2a-python-server", ".log");
    Process process =
        new ProcessBuilder(
                root.resolve(".venv/bin/python").toString(),
                "-m",
                "e2a_grpc",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                Integer.toString(port))
            .directory(root.toFile())
            .redirectErrorStream(true)
            .redirectOutput(log.toFile())
            .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
            .start();
    PythonServer server = new PythonServer(process, log, port);
    try {
      server.awaitServing();
    } catch (IOException | InterruptedException | RuntimeException e) {
      server.close();
      throw e;
    }
    return server;
  }

  private void awaitServing() throws IOException, InterruptedException {
    HealthGrpc.HealthBlockingStub health = HealthGrpc.newBlockingStub(channel);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IOException("the Python server exited: " + output());
      }
      try {
        HealthCheckResponse reply =
            health
                .withDeadlineAfter(2, TimeUnit.SECONDS)
                .check(HealthCheckRequest.getDefaultInstance());
        if (reply.getStatus() == HealthCheckResponse.ServingStatus.SERVING) {
          return;
        }
      } catch (StatusRuntimeException e) {
        // not listening yet
      }
      Thread.sleep(200);
    }
    throw new IOException("the Python server was not SERVING within 60 s: " + output());
  }

  /** The server's address, host:port. */
  String target() {
    return "127.0.0.1:" + port;
  }

  /** A plaintext channel to the server (closed with it). */
  ManagedChannel channel() {
    return channel;
  }

  /** What the server wrote so far. */
  String output() throws IOException {
    return Files.readString(log, StandardCharsets.UTF_8);
  }

  @Override
  public void close() throws InterruptedException, IOException {
    channel.shutdownNow();
    channel.awaitTermination(5, TimeUnit.SECONDS);
    process.destroy();
    if (!process.waitFor(10, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
    }
    Files.deleteIfExists(log);
  }
}

package dev.lameduck.real.consumer;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.web.server.context.WebServerInitializedEvent;
import org.springframework.cloud.client.ServiceInstance;
import org.springframework.cloud.client.discovery.DiscoveryClient;
import org.springframework.cloud.client.loadbalancer.LoadBalanced;
import org.springframework.context.event.EventListener;
import org.springframework.http.client.SimpleClientHttpRequestFactory;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.client.RestClient;
import org.springframework.web.client.RestClientResponseException;

/**
 * Calls the provider by service name in a loop and prints one JSON line per request on stdout:
 * {"lab":"call","t":startMs,"ms":durationMs,"instance":"...","status":200,"error":null,"known":[...]}.
 * The instance is what the provider says it is (x-instance header), so the line shows who
 * answered; "known" is what the Eureka client's local registry cache lists at that moment (the
 * hop before Spring Cloud LoadBalancer's own cache), so a test can split the propagation delay. POST /lab/load?on=true|false starts and stops the loop (stopping prints {"lab":"stopped"} after the last call line); GET /lab/call makes one call.
 */
@RestController
public class CallLoop {
  private final RestClient client;
  private final DiscoveryClient discovery;
  private final String target;
  private final long intervalMs;
  private final String portFile;
  private final AtomicBoolean on = new AtomicBoolean(false);
  private volatile Thread loop;

  public CallLoop(@LoadBalanced RestClient.Builder builder, DiscoveryClient discovery, @Value("${lab.target}") String target, @Value("${lab.path}") String path,
      @Value("${lab.interval-ms}") long intervalMs, @Value("${lab.port-file:}") String portFile) {
    SimpleClientHttpRequestFactory requests = new SimpleClientHttpRequestFactory();
    requests.setConnectTimeout(Duration.ofSeconds(2));
    requests.setReadTimeout(Duration.ofSeconds(5));
    this.client = builder.requestFactory(requests).baseUrl("http://" + target + path).build();
    this.discovery = discovery;
    this.target = target;
    this.intervalMs = intervalMs;
    this.portFile = portFile;
  }

  @EventListener
  public void onStarted(WebServerInitializedEvent event) throws IOException {
    int port = event.getWebServer().getPort();
    System.out.println("{\"lab\":\"listening\",\"port\":" + port + "}");
    if (!portFile.isEmpty()) {
      Path tmp = Path.of(portFile + ".tmp");
      Files.writeString(tmp, Integer.toString(port));
      Files.move(tmp, Path.of(portFile));
    }
  }

  @PostMapping("/lab/load")
  public String load(@RequestParam("on") boolean start) {
    if (start && on.compareAndSet(false, true)) {
      Thread t = new Thread(this::run, "lab-call-loop");
      t.setDaemon(true);
      loop = t;
      t.start();
    } else if (!start && on.compareAndSet(true, false)) {
      Thread t = loop;
      if (t != null) {
        try { t.join(10_000); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
      }
      // After the loop's last call line: a reader of stdout knows it has every line.
      System.out.println("{\"lab\":\"stopped\"}");
    }
    return "{\"on\":" + on.get() + "}";
  }

  @GetMapping(value = "/lab/call", produces = "application/json")
  public String once() {
    return call();
  }

  private void run() {
    while (on.get()) {
      long started = System.currentTimeMillis();
      System.out.println(call());
      long rest = intervalMs - (System.currentTimeMillis() - started);
      if (rest > 0) {
        try { Thread.sleep(rest); } catch (InterruptedException e) { return; }
      }
    }
  }

  private String call() {
    long t = System.currentTimeMillis();
    String instance = null;
    int status = 0;
    String error = null;
    try {
      ResponseEntity<String> res = client.get().retrieve().toEntity(String.class);
      status = res.getStatusCode().value();
      instance = res.getHeaders().getFirst("x-instance");
    } catch (RestClientResponseException e) {
      status = e.getStatusCode().value();
      instance = e.getResponseHeaders() == null ? null : e.getResponseHeaders().getFirst("x-instance");
      error = e.getClass().getSimpleName();
    } catch (RuntimeException e) {
      error = e.getClass().getSimpleName() + ": " + e.getMessage();
    }
    long ms = System.currentTimeMillis() - t;
    StringBuilder known = new StringBuilder("[");
    for (ServiceInstance i : discovery.getInstances(target)) {
      if (known.length() > 1) known.append(',');
      known.append(quote(i.getInstanceId()));
    }
    known.append(']');
    return "{\"lab\":\"call\",\"target\":" + quote(target) + ",\"t\":" + t + ",\"ms\":" + ms + ",\"instance\":" + quote(instance)
        + ",\"status\":" + status + ",\"error\":" + quote(error) + ",\"known\":" + known + "}";
  }

  private static String quote(String s) {
    if (s == null) return "null";
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }
}

package dev.lameduck.real.eurekaserver;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.web.server.context.WebServerInitializedEvent;
import org.springframework.cloud.context.environment.EnvironmentChangeEvent;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.event.EventListener;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * Test wiring only, no Eureka behaviour: reports the bound port (the tests start the JVM on port 0)
 * and lets a test name the peers once both are up (their ports are not known before). The peer
 * list goes where Spring Cloud reads it from (eureka.client.service-url.defaultZone) and is
 * announced with the EnvironmentChangeEvent a config refresh would publish, so Spring Cloud's
 * own RefreshablePeerEurekaNodes rebuilds the replication targets (its periodic
 * peer-eureka-nodes-update-interval-ms task would pick the list up too).
 */
@RestController
public class LabSupport {
  private static final Logger log = LoggerFactory.getLogger(LabSupport.class);
  private static final String PEERS = "eureka.client.service-url.defaultZone";
  private final ConfigurableEnvironment environment;
  private final ApplicationEventPublisher events;
  private final String portFile;

  public LabSupport(ConfigurableEnvironment environment, ApplicationEventPublisher events,
      @Value("${lab.port-file:}") String portFile) {
    this.environment = environment;
    this.events = events;
    this.portFile = portFile;
  }

  @EventListener
  public void onStarted(WebServerInitializedEvent event) throws IOException {
    int port = event.getWebServer().getPort();
    log.info("lab: eureka server listening on port {}", port);
    if (!portFile.isEmpty()) {
      Path tmp = Path.of(portFile + ".tmp");
      Files.writeString(tmp, Integer.toString(port));
      Files.move(tmp, Path.of(portFile));
    }
  }

  /** POST /lab/peers?urls=http://127.0.0.1:P/eureka/,... (comma-separated service URLs). */
  @PostMapping("/lab/peers")
  public ResponseEntity<String> peers(@RequestParam("urls") String urls) {
    // Into the Environment, as a config refresh would: the EnvironmentChangeEvent makes Spring Cloud's
    // ConfigurationPropertiesRebinder rebind EurekaClientConfigBean from it (a value put into the
    // bean alone would be overwritten by that rebind).
    environment.getPropertySources().addFirst(new MapPropertySource("lab-peers", Map.of(PEERS, urls)));
    events.publishEvent(new EnvironmentChangeEvent(Set.of(PEERS)));
    log.info("lab: peers set to {}", urls);
    return ResponseEntity.ok(urls);
  }
}

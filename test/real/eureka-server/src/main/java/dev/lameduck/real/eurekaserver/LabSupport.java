package dev.lameduck.real.eurekaserver;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.web.server.context.WebServerInitializedEvent;
import org.springframework.cloud.context.environment.EnvironmentChangeEvent;
import org.springframework.cloud.netflix.eureka.EurekaClientConfigBean;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.event.EventListener;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * Test wiring only, no Eureka behaviour: reports the bound port (the tests start the JVM on port 0)
 * and lets a test name the peers once both are up (their ports are not known before). The peer
 * list goes where Spring Cloud reads it from (eureka.client.service-url.defaultZone) and is
 * announced with the EnvironmentChangeEvent a config refresh would publish, so Spring Cloud's
 * own RefreshablePeerEurekaNodes rebuilds the replication targets.
 */
@RestController
public class LabSupport {
  private static final Logger log = LoggerFactory.getLogger(LabSupport.class);
  private final EurekaClientConfigBean clientConfig;
  private final ApplicationEventPublisher events;
  private final String portFile;

  public LabSupport(EurekaClientConfigBean clientConfig, ApplicationEventPublisher events,
      @Value("${lab.port-file:}") String portFile) {
    this.clientConfig = clientConfig;
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
    clientConfig.getServiceUrl().put(EurekaClientConfigBean.DEFAULT_ZONE, urls);
    events.publishEvent(new EnvironmentChangeEvent(Set.of("eureka.client.service-url.defaultZone")));
    log.info("lab: peers set to {}", urls);
    return ResponseEntity.ok(urls);
  }
}

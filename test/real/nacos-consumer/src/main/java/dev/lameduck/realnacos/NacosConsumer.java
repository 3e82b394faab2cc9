package dev.lameduck.realnacos;

import com.alibaba.nacos.api.naming.NamingFactory;
import com.alibaba.nacos.api.naming.NamingService;
import com.alibaba.nacos.api.naming.pojo.Instance;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;

/**
 * A consumer as Java services write one: each request asks the Nacos client for the healthy
 * instances of a service (its cached list, kept current by the server's pushes: gRPC on 2.x clients) and
 * calls the next one round robin, or (pick "weighted") the one the client itself picks by Nacos
 * weight (selectOneHealthyInstance: weighted random). Prints one JSON line per request and one per
 * change of the list. Args: serverAddr serviceName [pauseMs] [roundrobin|weighted]. Stops when stdin closes.
 */
public final class NacosConsumer {
  public static void main (String[] args) throws Exception {
    NamingService naming = NamingFactory.createNamingService(args[0]);
    String service = args[1];
    long pauseMs = args.length > 2 ? Long.parseLong(args[2]) : 2;
    boolean weighted = args.length > 3 && args[3].equals("weighted");
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    Thread stdinWatch = new Thread(() -> {
      try { while (System.in.read() != -1) { /* keep reading */ } } catch (Exception ignored) { }
      System.exit(0);
    });
    stdinWatch.setDaemon(true);
    stdinWatch.start();
    String lastHosts = "";
    long next = 0;
    System.out.println("{\"event\":\"ready\"}");
    while (true) {
      List<Instance> hosts = naming.selectInstances(service, true);
      String ports = hosts.stream().map((h) -> String.valueOf(h.getPort())).sorted().collect(Collectors.joining(","));
      if (!ports.equals(lastHosts)) {
        lastHosts = ports;
        System.out.println("{\"event\":\"hosts\",\"t\":" + System.currentTimeMillis() + ",\"ports\":[" + ports + "]}");
      }
      if (hosts.isEmpty()) { Thread.sleep(10); continue; }
      Instance target = weighted ? naming.selectOneHealthyInstance(service) : hosts.get((int) (next++ % hosts.size()));
      long at = System.currentTimeMillis();
      int status;
      try {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://" + target.getIp() + ":" + target.getPort() + "/work")).timeout(Duration.ofSeconds(2)).build();
        status = http.send(request, HttpResponse.BodyHandlers.discarding()).statusCode();
      } catch (Exception e) {
        status = 0;
      }
      System.out.println("{\"event\":\"request\",\"t\":" + at + ",\"port\":" + target.getPort() + ",\"status\":" + status + "}");
      if (pauseMs > 0) Thread.sleep(pauseMs);
    }
  }
}

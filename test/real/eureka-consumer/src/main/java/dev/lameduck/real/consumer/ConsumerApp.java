package dev.lameduck.real.consumer;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.cloud.client.loadbalancer.LoadBalanced;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.web.client.RestClient;

@SpringBootApplication
@EnableScheduling
public class ConsumerApp {
  public static void main(String[] args) {
    SpringApplication.run(ConsumerApp.class, args);
  }

  /** Spring Cloud LoadBalancer resolves http://{service-name}/... to an instance from Eureka. */
  @Bean
  @LoadBalanced
  RestClient.Builder loadBalancedRestClientBuilder() {
    return RestClient.builder();
  }

  /**
   * The plain builder everyone else gets. Without it the Eureka client's own RestClient transport
   * (Spring Cloud 2025.1) takes the only RestClient.Builder bean, the @LoadBalanced one, and asks
   * the load balancer for a service named after the Eureka server's host: no registry fetch at all.
   */
  @Bean
  @Primary
  RestClient.Builder restClientBuilder() {
    return RestClient.builder();
  }
}
